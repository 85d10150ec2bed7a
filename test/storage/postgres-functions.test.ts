// src/storage/postgres-functions.sql is what a freshly migrated PostgreSQL database holds: a migration
// that changes a function or trigger without the snapshot written anew fails here.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { POSTGRES_FUNCTIONS_PATH, postgresFunctionsSnapshot } from "../../scripts/write-postgres-functions.js";
import { POSTGRES_ADMIN_URL, testDialect } from "../support/database.js";

describe.skipIf(testDialect() !== "postgres")("src/storage/postgres-functions.sql (PostgreSQL)", () => {
  it("holds every function and trigger as the migrations leave them", { timeout: 120_000 }, async () => {
    const fresh = await postgresFunctionsSnapshot(POSTGRES_ADMIN_URL);
    expect(fresh, "the snapshot is stale: run `npm run generate:postgres-functions`").toBe(readFileSync(POSTGRES_FUNCTIONS_PATH, "utf8"));
  });
});
