// The rules by which the guides' test reads a guide and compares what it shows with what ran.
import { describe, expect, it } from "vitest";
import { declaredRefusal, fencedBlocks, isRunnable, missingLines, shownDifferences } from "../support/guide-blocks.js";

describe("reading a guide's blocks", () => {
  it("finds each block with its language and line, and refuses a language the test neither runs nor compares", () => {
    const blocks = fencedBlocks("Text\n\n```sh\ncurl x\n```\n\n```json\n{}\n```\n", "g.md");
    expect(blocks).toEqual([
      { lang: "sh", code: "curl x", line: 3 },
      { lang: "json", code: "{}", line: 7 },
    ]);
    expect(() => fencedBlocks("```python\nprint(1)\n```\n", "g.md")).toThrow("g.md:1: a ```python block");
    expect(() => fencedBlocks("```\nuntyped\n```\n", "g.md")).toThrow("g.md:1");
    expect(() => fencedBlocks("```sh\ncurl x\n", "g.md")).toThrow("never closed");
  });

  it("reads a block after an examples/ comment as a copy of that file, in the languages of the examples, never run", () => {
    const blocks = fencedBlocks("Python:\n\n<!-- examples/verifying/verify.py -->\n```python\nprint(1)\n```\n\n```sh\ncurl x\n```\n", "g.md");
    expect(blocks).toEqual([
      { lang: "python", code: "print(1)", line: 4, example: "examples/verifying/verify.py" },
      { lang: "sh", code: "curl x", line: 8 },
    ]);
    expect(blocks.map(isRunnable)).toEqual([false, true]);
    expect(fencedBlocks("<!-- examples/a.sh -->\n```sh\ntrue\n```\n", "g.md").map(isRunnable)).toEqual([false]);
    expect(() => fencedBlocks("<!-- examples/a.rb -->\n```ruby\nputs 1\n```\n", "g.md")).toThrow("g.md:2: a ```ruby copy of examples/a.rb");
  });

  it("reads the refusal a block declares for its last request", () => {
    expect(declaredRefusal("# Answers 409 DUPLICATE_EVENT: delivered.\ncurl x")).toEqual({ status: 409, reason: "DUPLICATE_EVENT" });
    expect(declaredRefusal("# Answers 404\ncurl x")).toEqual({ status: 404, reason: undefined });
    expect(declaredRefusal("curl x # it answers 200")).toBeUndefined();
  });
});

describe("comparing an answer shown with the real one", () => {
  const shown = {
    id: "0VcBY8OzsAcB0gfg",
    listenerId: "wh_MFnMyIsyoyAXAzKd",
    state: "SPEND_AUTHORIZATION_STATE_PENDING",
    amount: { currencyCode: "USD", units: "30", nanos: 0 },
    expiresAt: "2026-11-27T15:00:25.869Z",
    trace: ["window 2026-11-01T00:00:00.000Z..2026-12-01T00:00:00.000Z: spent USD 0 -> approve"],
    cause: null,
  };
  const real = {
    ...shown,
    id: "Zz9yX8wV7uT6sR5q",
    listenerId: "wh_ER3mUQvPV8IIdMXa",
    expiresAt: "2027-01-02T03:04:05Z",
    trace: ["window 2027-01-01T00:00:00.000Z..2027-02-01T00:00:00.000Z: spent USD 0 -> approve"],
  };

  it("accepts ids and timestamps that differ, in values and inside prose", () => {
    expect(shownDifferences(shown, real)).toEqual([]);
  });

  it("compares a URL by its path, ids aside, on any server", () => {
    const url = "http://127.0.0.1:8080/api/v1/webhooks/incoming/wh_7Hq2Lr9sVx3mNc8K";
    expect(shownDifferences({ url }, { url: "https://tenant.example.com/api/v1/webhooks/incoming/wh_MFnMyIsyoyAXAzKd" })).toEqual([]);
    expect(shownDifferences({ url }, { url: "http://127.0.0.1:8080/api/v1/automations/aut_ADc1v0gn9zPQQSCZ" })).toHaveLength(1);
  });

  it("reports another state, amount or trace, a key shown or answered alone, and a list of another length", () => {
    expect(shownDifferences(shown, { ...real, state: "SPEND_AUTHORIZATION_STATE_DECLINED" })).toEqual([
      '$.state: shown "SPEND_AUTHORIZATION_STATE_PENDING", answered "SPEND_AUTHORIZATION_STATE_DECLINED"',
    ]);
    expect(shownDifferences(shown, { ...real, amount: { currencyCode: "USD", units: "31", nanos: 0 } })).toEqual(['$.amount.units: shown "30", answered "31"']);
    expect(shownDifferences(shown, { ...real, trace: ["window 2027-01-01T00:00:00.000Z..2027-02-01T00:00:00.000Z: spent USD 5 -> approve"] })).toHaveLength(1);
    const { cause: _, ...withoutCause } = real;
    expect(shownDifferences(shown, { ...withoutCause, extra: 1 })).toEqual(["$: shown but not answered: cause", "$: answered but not shown: extra"]);
    expect(shownDifferences({ list: [1, 2] }, { list: [1] })).toEqual(["$.list: shown 2 items, answered 1"]);
    expect(shownDifferences({ a: null }, { a: {} })).toEqual(["$.a: shown null, answered {}"]);
  });

  it("finds each line of a text block among the lines printed, numbers aside", () => {
    const printed = 'RateLimit-Policy: "source";q=12000;w=60\r\nRateLimit: "source";r=11998;t=1\r\n';
    expect(missingLines('RateLimit: "source";r=11990;t=1\n', printed)).toEqual([]);
    expect(missingLines("Idempotent-Replayed: true\n", printed)).toEqual(["Idempotent-Replayed: true"]);
  });
});
