// The configuration as real processes read it, `npm start`'s and the commands' beside it: every
// problem is named in one run, a line each naming its variable, with exit code 2, nothing created
// and no secret echoed; NODE_ENV in any case; a HOST or METRICS_HOST this machine cannot listen
// on, or a PORT or METRICS_PORT another process holds; SECRETS_KEY beside SECRETS_KEY_FILE;
// timeouts that contradict each other.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, type RunResult } from "../../support/process.js";
import { runCommand, startToEnd } from "../../support/release.js";

const dir = mkdtempSync(join(tmpdir(), "tenant-configuration-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY = Buffer.alloc(32, 4).toString("base64url");
const PRODUCTION = { NODE_ENV: "production", DATABASE_URL: `sqlite:${join(dir, "never.sqlite")}`, BASE_URL: "https://tenant.example.test", SECRETS_KEY: KEY, SECRETS_KEY_FILE: "" };
/** Unset, as `npm start` without them sees them. */
const NONE_OF_PRODUCTIONS = { DATABASE_URL: "", BASE_URL: "", SECRETS_KEY: "", SECRETS_KEY_FILE: "" };
/** A PostgreSQL URL the refusals come before: nothing listens there. */
const POSTGRES = "postgres://postgres@127.0.0.1:1/never";

/** The problems a run names, a line each: it exited 2 with nothing else on stderr, nothing on stdout, and no secret key's value. */
function problems(run: RunResult): string[] {
  expect(run.code, run.out).toBe(2);
  expect(run.stdout).toBe("");
  expect(run.out).not.toContain(KEY);
  const lines = run.stderr.trimEnd().split("\n");
  for (const line of lines) expect(line, run.stderr).toMatch(/^configuration error: /);
  return lines.map((line) => line.slice("configuration error: ".length));
}

/** What a server start with `env` refuses, in a working directory of its own, where it must create nothing (the defaults of development are under ./data). */
async function refusedStart(env: Record<string, string>): Promise<string[]> {
  const cwd = mkdtempSync(join(dir, "cwd-"));
  const found = problems(await startToEnd(env, undefined, cwd));
  expect(readdirSync(cwd)).toEqual([]);
  return found;
}

const missing = (name: string) => expect.stringMatching(new RegExp(`^${name.replace(/[()]/g, "\\$&")} must be set when NODE_ENV=production: `));

describe("a start refused for its configuration names every problem in one run", { timeout: 120_000 }, () => {
  it("under NODE_ENV=production without DATABASE_URL, BASE_URL and SECRETS_KEY: all three", async () => {
    expect(await refusedStart({ NODE_ENV: "production", ...NONE_OF_PRODUCTIONS })).toEqual([missing("BASE_URL"), missing("DATABASE_URL"), missing("SECRETS_KEY (or SECRETS_KEY_FILE)")]);
  });

  it("bad values and missing ones together, the addresses to listen on among them", async () => {
    const found = await refusedStart({ ...PRODUCTION, NODE_ENV: "Production", BASE_URL: "", PORT: "eighty", LOG_LEVEL: "loud", HOST: "no-such-host.invalid" });
    expect(found).toEqual([
      `PORT must be an integer between 0 and 65535, got "eighty"`,
      missing("BASE_URL"),
      `LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"`,
      expect.stringMatching(/^HOST "no-such-host\.invalid" does not resolve to an address \(/),
    ]);
  });
});

describe("NODE_ENV", { timeout: 120_000 }, () => {
  for (const value of ["Production", "PRODUCTION"]) {
    it(`${value} is production: nothing is made up`, async () => {
      expect(await refusedStart({ NODE_ENV: value, ...NONE_OF_PRODUCTIONS, BASE_URL: "https://tenant.example.test" })).toEqual([missing("DATABASE_URL"), missing("SECRETS_KEY (or SECRETS_KEY_FILE)")]);
    });
  }

  it("any value but production, development and test is refused, naming them; the rest is checked as for production", async () => {
    const allowed = `NODE_ENV must be one of production, development, test (in any case), or unset (development), got`;
    expect(await refusedStart({ ...PRODUCTION, NODE_ENV: "prod" })).toEqual([`${allowed} "prod"`]);
    expect(await refusedStart({ NODE_ENV: "staging", ...NONE_OF_PRODUCTIONS })).toEqual([`${allowed} "staging"`, missing("BASE_URL"), missing("DATABASE_URL"), missing("SECRETS_KEY (or SECRETS_KEY_FILE)")]);
  });
});

describe("the addresses to listen on are checked before anything is created", { timeout: 120_000 }, () => {
  it("a HOST that does not resolve, or is not this machine's, is refused naming it", async () => {
    expect(await refusedStart({ HOST: "no-such-host.invalid" })).toEqual([expect.stringMatching(/^HOST "no-such-host\.invalid" does not resolve to an address \((ENOTFOUND|EAI_AGAIN)\)$/)]);
    // 192.0.2.0/24 is for documentation (RFC 5737): no machine's own.
    expect(await refusedStart({ HOST: "192.0.2.1" })).toEqual([`HOST "192.0.2.1" is not an address of this machine (EADDRNOTAVAIL)`]);
  });

  it("so is such a METRICS_HOST", async () => {
    const port = String(await freePort());
    expect(await refusedStart({ METRICS_PORT: port, METRICS_HOST: "no-such-host.invalid" })).toEqual([expect.stringMatching(/^METRICS_HOST "no-such-host\.invalid" does not resolve to an address/)]);
    expect(await refusedStart({ METRICS_PORT: port, METRICS_HOST: "192.0.2.1" })).toEqual([`METRICS_HOST "192.0.2.1" is not an address of this machine (EADDRNOTAVAIL)`]);
  });

  it("a PORT or METRICS_PORT another process holds is refused naming the variables that choose another", async () => {
    const taken = await holdPort();
    try {
      const port = taken.port;
      expect(await refusedStart({ HOST: "127.0.0.1", PORT: String(port) })).toEqual([
        `PORT ${port} is in use on HOST "127.0.0.1" by another process (EADDRINUSE): stop that process, or set PORT (or HOST) to a free one`,
      ]);
      // Held on 127.0.0.1, the port is taken for every address too.
      expect(await refusedStart({ METRICS_HOST: "0.0.0.0", METRICS_PORT: String(port) })).toEqual([
        `METRICS_PORT ${port} is in use on METRICS_HOST "0.0.0.0" by another process (EADDRINUSE): stop that process, or set METRICS_PORT (or METRICS_HOST) to a free one`,
      ]);
    } finally {
      await new Promise((resolve) => taken.server.close(resolve));
    }
  });
});

/** A port another server listens on at 127.0.0.1. */
async function holdPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("a TCP server has a port");
  return { server, port: address.port };
}

describe("variables that contradict each other are refused, naming both", { timeout: 120_000 }, () => {
  it("SECRETS_KEY and SECRETS_KEY_FILE", async () => {
    expect(await refusedStart({ SECRETS_KEY: KEY, SECRETS_KEY_FILE: join(dir, "secrets.key") })).toEqual([`SECRETS_KEY and SECRETS_KEY_FILE are both set: set one of them, the key or the file that holds it`]);
  });

  it("a query timeout not above the statement timeout, or without one", async () => {
    expect(await refusedStart({ DATABASE_URL: POSTGRES, DATABASE_STATEMENT_TIMEOUT_MS: "20000", DATABASE_QUERY_TIMEOUT_MS: "10000" })).toEqual([
      expect.stringMatching(/^DATABASE_STATEMENT_TIMEOUT_MS \(20000\) must be less than DATABASE_QUERY_TIMEOUT_MS \(10000\): /),
    ]);
    expect(await refusedStart({ DATABASE_URL: POSTGRES, DATABASE_STATEMENT_TIMEOUT_MS: "0" })).toEqual([
      expect.stringMatching(/^DATABASE_QUERY_TIMEOUT_MS \(20000\) needs DATABASE_STATEMENT_TIMEOUT_MS on, below it: .* Set DATABASE_STATEMENT_TIMEOUT_MS below 20000, or DATABASE_QUERY_TIMEOUT_MS=0 as well$/),
    ]);
    // Both off is consistent: the start goes on to the database, which is not there (exit 1).
    const accepted = await startToEnd({ DATABASE_URL: POSTGRES, DATABASE_STATEMENT_TIMEOUT_MS: "0", DATABASE_QUERY_TIMEOUT_MS: "0", DATABASE_POOL_TIMEOUT_MS: "1000" }, undefined, mkdtempSync(join(dir, "cwd-")));
    expect(accepted.code, accepted.out).toBe(1);
    expect(accepted.stderr).not.toContain("configuration error");
  });

  it("a lock timeout not below the statement timeout", async () => {
    expect(await refusedStart({ DATABASE_URL: POSTGRES, DATABASE_LOCK_TIMEOUT_MS: "15000" })).toEqual([
      expect.stringMatching(/^DATABASE_LOCK_TIMEOUT_MS \(15000\) must be less than DATABASE_STATEMENT_TIMEOUT_MS \(15000\): /),
    ]);
  });

  it("BOOTSTRAP_CREDENTIAL_FILE beside a configured BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET", async () => {
    const configured = { BOOTSTRAP_CLIENT_ID: "configured-admin", BOOTSTRAP_CLIENT_SECRET: "configured-admin-secret-0123" };
    const found = await refusedStart({ ...configured, BOOTSTRAP_CREDENTIAL_FILE: join(dir, "credential.env") });
    expect(found).toEqual([expect.stringMatching(/^BOOTSTRAP_CREDENTIAL_FILE and BOOTSTRAP_CLIENT_ID\/BOOTSTRAP_CLIENT_SECRET are both set: /)]);
    expect(found.join("\n")).not.toContain(configured.BOOTSTRAP_CLIENT_SECRET);
  });
});

describe("the commands beside the server name every problem in one run too", { timeout: 120_000 }, () => {
  const production = { NODE_ENV: "PRODUCTION", ...NONE_OF_PRODUCTIONS, SQLITE_BUSY_TIMEOUT_MS: "soon" };
  const sqliteBusy = `SQLITE_BUSY_TIMEOUT_MS must be an integer between 0 and 600000, got "soon"`;

  it("npm run migrate, backup and restore: the database's variables", async () => {
    for (const [entry, args] of [["src/commands/migrate.ts", []], ["src/commands/backup.ts", [join(dir, "backup.sqlite")]], ["src/commands/restore.ts", [join(dir, "backup.sqlite")]]] as const) {
      expect(problems(await runCommand(entry, [...args], production)), entry).toEqual([missing("DATABASE_URL"), sqliteBusy]);
    }
  });

  it("npm run rotate-signing-key: the database's and the secrets key's", async () => {
    expect(problems(await runCommand("src/commands/rotate-signing-key.ts", [], production))).toEqual([missing("DATABASE_URL"), sqliteBusy, missing("SECRETS_KEY (or SECRETS_KEY_FILE)")]);
    expect(problems(await runCommand("src/commands/rotate-signing-key.ts", [], { DATABASE_URL: POSTGRES, SECRETS_KEY: KEY, SECRETS_KEY_FILE: join(dir, "secrets.key") }))).toEqual([
      `SECRETS_KEY and SECRETS_KEY_FILE are both set: set one of them, the key or the file that holds it`,
    ]);
  });
});
