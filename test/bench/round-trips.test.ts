// The bench's reading of the round trips a server process recorded per request (bench/round-trips.ts).
import { describe, expect, it } from "vitest";
import { summarizeRoundTrips } from "../../bench/round-trips.js";
import type { RoundTripLine } from "../../bench/servers/round-trips.js";

const answer = (request: number, statements: string[]): RoundTripLine => ({ request, method: "POST", path: "/x", status: 200, statements });

describe("summarizeRoundTrips", () => {
  it("counts each request's statements, those from BEGIN to COMMIT, and what its context sent after the answer", () => {
    const tx = ["select 1", "BEGIN", "select 2", "update t", "commit"];
    const lines: RoundTripLine[] = [answer(1, tx), { request: 1, after: "update e" }, answer(2, tx), { request: 2, after: "update e" }, answer(3, ["select 1", ...tx])];
    expect(summarizeRoundTrips("op", lines)).toEqual({ operation: "op", requests: 3, roundTrips: 5, inTransaction: 4, transactions: 1, after: 1, range: [5, 6] });
  });

  it("says none in a transaction for statements sent alone, and gives no range when every request sent as many", () => {
    expect(summarizeRoundTrips("get", [answer(1, ["select 1"]), answer(2, ["select 1"])])).toEqual({ operation: "get", requests: 2, roundTrips: 1, inTransaction: 0, transactions: 0, after: 0 });
  });
});
