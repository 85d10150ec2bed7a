import { describe, expect, it } from "vitest";
import { busiestStretch, originOf, renderSummary, summarize, type CpuProfile } from "../../bench/profile-summary.js";

const frame = (id: number, functionName: string, url = "") => ({ id, callFrame: { functionName, url, lineNumber: 9 } });

/** A profile of 5 s sampled every 1 ms: idle but for seconds 1 to 3, where each 10 ms holds 4 ms of writev, 3 of pg, 2 of ours, 1 of the collector. */
function profile(): CpuProfile {
  const nodes = [
    { ...frame(1, "(root)"), children: [2, 3, 4, 5, 6] },
    frame(2, "(idle)"),
    frame(3, "writev"),
    frame(4, "submit", "file:///app/node_modules/pg/lib/query.js"),
    frame(5, "json", "file:///app/dist/src/http/json-answer.js"),
    frame(6, "(garbage collector)"),
  ];
  const busy = [3, 3, 3, 3, 4, 4, 4, 5, 5, 6];
  const samples: number[] = [];
  for (let ms = 0; ms < 5000; ms++) samples.push(ms >= 1000 && ms < 4000 ? busy[ms % 10]! : 2);
  // V8's first delta is from the profile's start to its first sample: none here, so sample i is at i ms.
  return { nodes, startTime: 1_000_000, samples, timeDeltas: samples.map((_, i) => (i === 0 ? 0 : 1000)) };
}

describe("bench profile summary", () => {
  it("finds the measured run as the longest stretch of busy seconds", () => {
    expect(busiestStretch(profile())).toEqual({ from: 1, to: 4 });
  });

  it("divides the stretch's samples by the requests answered in it", () => {
    // 100 requests a second for 3 s: 3 s of busy samples are 10,000 µs a request.
    const summary = summarize(profile(), { from: 1, to: 4 }, 100);
    expect(summary.requests).toBe(300);
    expect(summary.busy).toBeCloseTo(10_000, 0);
    expect(Object.fromEntries(summary.byOrigin.map(([k, v]) => [k, Math.round(v)]))).toEqual({ writev: 4000, pg: 3000, "src/http/": 2000, "(garbage collector)": 1000 });
    expect(summary.byFunction[0]).toEqual(["writev :10", 4000]);
    expect(renderSummary(summary, 2)).toContain("| pg | 3000.0 |");
  });

  it("names a frame by its package, Node's own modules or our folder", () => {
    expect(originOf({ functionName: "x", url: "file:///a/node_modules/@scope/pkg/lib/x.js", lineNumber: 0 })).toBe("@scope/pkg");
    expect(originOf({ functionName: "emit", url: "node:events", lineNumber: 0 })).toBe("(node)");
    expect(originOf({ functionName: "(program)", url: "", lineNumber: 0 })).toBe("(native)");
  });
});
