// For the tests of the cached principals (src/identity/access-tokens.ts, src/storage/change-versions.ts):
// raw token requests against any instance, the database opened beside the servers for the changes
// no operation makes, and a wait that measures how long a change took to show.
import { afterAll, beforeAll, expect } from "vitest";
import { recordChange } from "../../../src/storage/change-versions.js";
import { openStorage, type Storage } from "../../../src/storage/connect.js";
import { writeTransaction } from "../../../src/storage/transactions.js";
import { startTestServer, type TestServer } from "../../support/server.js";

/** The bound every instance keeps: a change shows within 1 s of its commit. */
export const BOUND_MS = 1000;

export interface CacheTestServers {
  /** Polls as configured. */
  ts: TestServer;
  /** Polls once a minute: what changes there at once is this instance's own invalidation, not a poll. */
  local: TestServer;
  /** Its one poll is trusted for 1 ms: as an instance whose polls fail or lag, it must read every time. */
  stale: TestServer;
  /** The databases of `ts` and `stale`, opened beside them for the changes no operation makes. */
  storage: Storage;
  staleStorage: Storage;
}

/** The three servers of a cache's single-instance tests, started before the file's tests and stopped after. */
export function cacheTestServers(poll: "principalsPoll" | "fundPolicyPoll" | "listenersPoll"): CacheTestServers {
  const servers = {} as CacheTestServers;
  beforeAll(async () => {
    [servers.ts, servers.local, servers.stale] = await Promise.all([
      startTestServer({ RATE_LIMIT: "off" }),
      startTestServer({ RATE_LIMIT: "off" }, undefined, { [poll]: { pollMs: 60_000, trustMs: 120_000 } }),
      startTestServer({ RATE_LIMIT: "off" }, undefined, { [poll]: { pollMs: 60_000, trustMs: 1 } }),
    ]);
    servers.storage = await openDatabase(servers.ts.databaseUrl);
    servers.staleStorage = await openDatabase(servers.stale.databaseUrl);
  });
  afterAll(async () => {
    await Promise.all([servers.storage?.close(), servers.staleStorage?.close()]);
    await Promise.all([servers.ts?.stop(), servers.local?.stop(), servers.stale?.stop()]);
  });
  return servers;
}

export async function accessToken(url: string, clientId: string, clientSecret: string): Promise<string> {
  const r = await fetch(`${url}/auth/v1/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret }),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { access_token: string }).access_token;
}

/** GET /api/v1/users with `token`: 200 for a super-admin, 403 for other roles, 401 once revoked. */
export async function listUsers(url: string, token: string): Promise<{ status: number; message?: string }> {
  const r = await fetch(`${url}/api/v1/users?page_size=1`, { headers: { Authorization: `Bearer ${token}` } });
  const body = (await r.json()) as { message?: string };
  return { status: r.status, ...(body.message ? { message: body.message } : {}) };
}

/**
 * Asks until `answer` gives `status`, from `since` (taken before the change was sent, so that what
 * is measured is at least the time since its commit). Returns when the last ask that still got the
 * old answer was sent, in milliseconds after `since`: the promise is that a request arriving past
 * the bound sees the change, so the asks' own durations (long on a loaded machine) do not count.
 * Fails when asks sent past `BOUND_MS` plus a margin still get the old answer.
 */
export function msUntil(since: number, status: number, answer: () => Promise<{ status: number }>): Promise<number> {
  return msUntilSeen(since, async () => {
    const got = (await answer()).status;
    return got === status || `still ${got}, expected ${status}`;
  });
}

/** As msUntil, until `seen` answers true; what it answers otherwise says what is still seen. */
export async function msUntilSeen(since: number, seen: () => Promise<true | string>): Promise<number> {
  let lastStale = 0;
  for (;;) {
    const sent = performance.now() - since;
    const got = await seen();
    if (got === true) return lastStale;
    lastStale = sent;
    if (sent > BOUND_MS + 500) throw new Error(`${got} when asked ${Math.round(sent)} ms after the change was sent`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The test database, opened beside the servers on it. */
export function openDatabase(url: string): Promise<Storage> {
  return openStorage(url.startsWith("sqlite:") ? { kind: "sqlite", path: url.slice("sqlite:".length) } : { kind: "postgres", url });
}

/**
 * Sets a user's roles as a writer of users would: in one transaction with the principals' version.
 * No operation changes roles yet; this is the write such an operation must make.
 */
export async function setRoles(storage: Storage, userId: string, roles: string[], options: { record: boolean }): Promise<void> {
  await writeTransaction(storage, { exclusive: [] }, async (db) => {
    await db.updateTable("users").set({ roles: JSON.stringify(roles) }).where("id", "=", userId).execute();
    if (options.record) await recordChange(db, "principals");
  });
}
