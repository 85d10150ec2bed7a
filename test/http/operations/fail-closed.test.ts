// The server fails closed, as real processes: under NODE_ENV=production it makes up none of the
// database, the base URL and the secrets key (exit 2, naming the variable, nothing created); in any
// environment it refuses a secrets key that does not open what the database holds sealed (exit 2,
// the message naming no secret), on the test database (SQLite, or PostgreSQL in that leg).
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Acceptance } from "../../support/acceptance.js";
import { createTestDatabase } from "../../support/database.js";
import { withDatabase } from "../../support/old-database.js";
import { startToEnd, serveRelease } from "../../support/release.js";

const dir = mkdtempSync(join(tmpdir(), "tenant-fail-closed-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ADMIN = { clientId: "fail-closed-admin", clientSecret: "fail-closed-admin-secret-0123" };
const key = (fill: number) => Buffer.alloc(32, fill).toString("base64url");

describe("under NODE_ENV=production", () => {
  const production = { NODE_ENV: "production", DATABASE_URL: `sqlite:${join(dir, "prod.sqlite")}`, BASE_URL: "https://tenant.example.test", SECRETS_KEY: key(1) };
  const needs = { DATABASE_URL: ["BASE_URL", "SECRETS_KEY"], BASE_URL: ["DATABASE_URL", "SECRETS_KEY"], SECRETS_KEY: ["DATABASE_URL", "BASE_URL"] } as const;

  for (const [name, others] of Object.entries(needs)) {
    it(`refuses to start without ${name}: exit 2, the message naming it alone, nothing created`, { timeout: 90_000 }, async () => {
      const cwd = mkdtempSync(join(dir, "cwd-"));
      // The defaults a development start would take are relative to the working directory: ./data/.
      const run = await startToEnd({ ...production, [name]: "", SECRETS_KEY_FILE: "" }, undefined, cwd);
      expect(run.code, run.out).toBe(2);
      expect(run.stderr).toContain(`${name} ${name === "SECRETS_KEY" ? "(or SECRETS_KEY_FILE) " : ""}must be set when NODE_ENV=production`);
      for (const other of others) expect(run.stderr).not.toMatch(new RegExp(`\\b${other}\\b`));
      expect(readdirSync(cwd)).toEqual([]);
      expect(existsSync(join(dir, "prod.sqlite"))).toBe(false);
    });
  }

  it("refuses a SECRETS_KEY_FILE that does not exist, and does not create it", { timeout: 90_000 }, async () => {
    const file = join(dir, "missing.key");
    const run = await startToEnd({ ...production, SECRETS_KEY: "", SECRETS_KEY_FILE: file });
    expect(run.code, run.out).toBe(2);
    expect(run.stderr).toContain(`SECRETS_KEY_FILE ${file} does not exist`);
    expect(existsSync(file)).toBe(false);
  });
});

describe("the secrets key at every start", () => {
  it("refuses a key that does not open the secrets sealed in the database, with or without its key check; the right key serves them", { timeout: 240_000 }, async () => {
    const database = await createTestDatabase(mkdtempSync(join(dir, "db-")));
    const env = (secretsKey: string) => ({ DATABASE_URL: database.url, SECRETS_KEY: secretsKey, BOOTSTRAP_CLIENT_ID: ADMIN.clientId, BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret });
    try {
      const first = await serveRelease(env(key(1)));
      const hook = await new Acceptance(first.url, ADMIN).hook();
      await first.stop();

      const refused = await startToEnd(env(key(2)));
      expect(refused.code, refused.out).toBe(2);
      expect(refused.stderr).toContain("refusing to start: SECRETS_KEY does not open the secrets sealed in the database");
      for (const secret of [key(1), key(2), hook.secret]) expect(refused.out).not.toContain(secret);

      // A database from before the key check: what it holds sealed is tried instead.
      await withDatabase(database.url, (db) => db.deleteFrom("settings").where("key", "=", "secrets_key_check").execute());
      const refusedAgain = await startToEnd(env(key(2)));
      expect(refusedAgain.code, refusedAgain.out).toBe(2);
      expect(refusedAgain.stderr).toContain("refusing to start: SECRETS_KEY does not open the webhook secrets sealed in the database");

      const right = await serveRelease(env(key(1)));
      try {
        expect(await new Acceptance(right.url, ADMIN).deliver(hook)).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });
      } finally {
        await right.stop();
      }
      // The key check is back, written by the start with the right key.
      const wrongOnceMore = await startToEnd(env(key(2)));
      expect(wrongOnceMore.stderr).toContain("SECRETS_KEY does not open the secrets sealed in the database");
    } finally {
      await database.drop();
    }
  });
});
