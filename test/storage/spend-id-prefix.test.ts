// PostgreSQL seeds a window's usage row from the authorizations whose time-ordered ids fall between
// the prefixes of its start and its end (spend_id_prefix, migration 0019); the ids are made by
// src/core/ids.ts. The two must agree on every instant a window can start or end at, or a seed
// would miss spends (or count another window's).
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { timeOrderedId, timeOrderedPrefix } from "../../src/core/ids.js";
import { testDialect } from "../support/database.js";
import { freshStorageEachTest } from "../support/storage.js";

const INSTANTS = [
  "1970-01-01T00:00:01.000Z",
  "2001-09-09T01:46:40.000Z",
  "2026-10-31T10:00:00.000Z",
  "2026-11-01T00:00:00.000Z",
  "2026-11-20T09:00:00.123Z",
  "2026-12-31T23:59:59.999Z",
  "2027-03-28T01:00:00.000Z",
  "2100-02-28T15:30:00.000Z",
  "8000-01-01T00:00:00.000Z",
];

describe("time-ordered id prefixes", () => {
  it("an id made at an instant sorts at or after its prefix and before the next millisecond's", () => {
    for (const instant of INSTANTS) {
      const ms = Date.parse(instant);
      const id = timeOrderedId(ms, 8);
      expect(id.startsWith(timeOrderedPrefix(ms)), instant).toBe(true);
      expect(id >= timeOrderedPrefix(ms) && id < timeOrderedPrefix(ms + 1), instant).toBe(true);
      expect(timeOrderedId(ms - 1, 8) < timeOrderedPrefix(ms), instant).toBe(true);
    }
  });
});

describe.skipIf(testDialect() !== "postgres")("spend_id_prefix (PostgreSQL)", () => {
  const current = freshStorageEachTest("spend-id-prefix");

  it("is timeOrderedPrefix, for every instant a window can start or end at", async () => {
    const { rows } = await sql<{ at: string; prefix: string }>`
      select at, spend_id_prefix(at) as prefix from unnest(${INSTANTS}::text[]) as at`.execute(current.storage.db);
    expect(Object.fromEntries(rows.map((r) => [r.at, r.prefix]))).toEqual(Object.fromEntries(INSTANTS.map((at) => [at, timeOrderedPrefix(Date.parse(at))])));
  });
});
