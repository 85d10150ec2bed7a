// The server's one stop list: stops run once, the last registered first, and a stop that fails is
// logged by its part's name while the others still run.
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/core/logger.js";
import { StopList } from "../../src/core/stop-list.js";

function logged() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) });
  return { lines, logger: createLogger("info", sink) };
}

describe("StopList", () => {
  it("runs the stops in the reverse order of their registration, each once", async () => {
    const { logger } = logged();
    const stops = new StopList(logger);
    const ran: string[] = [];
    stops.add("database", () => void ran.push("database"));
    stops.started("worker", { stop: async () => void ran.push("worker") });
    stops.add("listener", () => void ran.push("listener"));
    expect(await stops.stopAll()).toBe(true);
    expect(await stops.stopAll()).toBe(true);
    expect(ran).toEqual(["listener", "worker", "database"]);
  });

  it("logs a stop that fails, naming its part, and still runs the rest", async () => {
    const { lines, logger } = logged();
    const stops = new StopList(logger);
    const ran: string[] = [];
    stops.add("database", () => void ran.push("database"));
    stops.add("metrics listener", () => Promise.reject(new Error("socket gone")));
    stops.add("listener", () => void ran.push("listener"));
    expect(await stops.stopAll()).toBe(false);
    expect(ran).toEqual(["listener", "database"]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.filter((l) => l.msg === "stopping a part of the server failed").map((l) => l.part)).toEqual(["metrics listener"]);
  });
});
