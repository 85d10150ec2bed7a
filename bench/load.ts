// What the orchestrator (bench/run.ts) asks of the load generator (bench/driver.ts, its own
// process) and what it answers. Plain JSON both ways: the two talk over the child-process IPC channel.
import type { JsonWebKey } from "node:crypto";
import type { StatementCost, StatementsSource } from "./statements.js";

/** How each request of a scenario is built. */
export type RequestSpec =
  /** The same request every time. */
  | { kind: "fixed"; method: "GET" | "POST"; path: string; headers: Record<string, string>; body?: string }
  /**
   * A request per key: in `path` and `body`, `{k}` becomes the request counter modulo `keys` and
   * `{r}` a random integer from 1 to 1,000,000 (so that every write changes the row). With
   * `freshIdempotencyKey`, each request carries an `Idempotency-Key` of its own (a UUID v4).
   */
  | { kind: "varying"; method: "GET" | "POST"; path: string; headers: Record<string, string>; body?: string; keys: number; freshIdempotencyKey?: boolean }
  /**
   * A request per id, each id once, in order: `{id}` in `path` becomes the next of `ids` (e.g. a
   * pending authorization to capture). Past the last id they start again (and answer an error).
   */
  | { kind: "each"; method: "POST"; path: string; headers: Record<string, string>; body?: string; ids: string[] }
  /** A signed webhook delivery with a fresh UUID v4 event id, timestamp and HMAC signature each time. */
  | { kind: "hmac"; path: string; secret: string; body: string }
  /**
   * A webhook delivery authenticated by a JWT signed for it (jti = event id, htb_s256 of the body).
   * `pregenerate` tokens are signed before the run; past them, tokens are signed during the run.
   */
  | { kind: "jwt"; path: string; alg: "ES256" | "EdDSA"; kid: string; privateJwk: JsonWebKey; subject: string; audience: string; body: string; pregenerate: number };

export interface LoadSpec {
  /** Origin of the server under load, e.g. http://127.0.0.1:41234. */
  origin: string;
  connections: number;
  durationSeconds: number;
  /** A discarded run of this length first (JIT, caches, connection pools). 0 for none. */
  warmupSeconds: number;
  /** The status every answer should have; any other counts as an error. */
  expectStatus: number;
  /** Requests a second over all connections; as many as the server answers when absent. */
  rate?: number;
  /** The server process under load, whose CPU time is read around the measured run. */
  serverPid: number;
  /** --statements: PostgreSQL's statements over the measured run (bench/statements.ts). */
  statements?: StatementsSource;
}

export interface LoadResult {
  /** Answers per second over the measured run (every status). */
  requestsPerSecond: number;
  /** Answers received in the measured run. */
  total: number;
  durationSeconds: number;
  /** Latency percentiles in milliseconds (microsecond resolution), every answer counted. */
  latencyMs: { p50: number; p99: number; p99_9: number; max: number; mean: number };
  errors: {
    /** Answers with another status than the expected one. */
    unexpectedStatus: number;
    /** Connection errors and resets. */
    socket: number;
    timeouts: number;
  };
  /** Answers by status. */
  statuses: Record<string, number>;
  /**
   * CPU time (user + system, every thread) over the measured run: of the server, per answer and in
   * cores (CPU seconds a second), and of the load generator per answer. Work the server left queued
   * when the run ended (executions) is not in it. PostgreSQL's processes' per answer (about none on
   * SQLite's scenarios). The machine's: what the rest used per answer (its busy time less the
   * server's, the load generator's and PostgreSQL's: the kernel's network work that no process is
   * charged for, mostly), and the cores left idle (CPU seconds a second).
   */
  cpu: { serverMicrosPerRequest: number; serverCores: number; loadGeneratorMicrosPerRequest: number; databaseMicrosPerRequest: number; otherMicrosPerRequest: number; idleCores: number };
  /** JWT scenarios: tokens signed before the run, and signed during it once those ran out. */
  tokens?: { pregenerated: number; signedDuringRun: number };
  /** With `LoadSpec.statements`: the costliest statements of the measured run, per answer. */
  statements?: StatementCost[];
}

export const totalErrors = (r: LoadResult): number => r.errors.unexpectedStatus + r.errors.socket + r.errors.timeouts;

export type DriverMessage = { id: number; spec: LoadSpec; request: RequestSpec };
export type DriverAnswer = { id: number } & ({ ok: true; result: LoadResult } | { ok: false; error: string });
