// Which PostgreSQL the PostgreSQL test leg runs on: the server at TEST_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/postgres) when it answers, or else an embedded server started for
// the run. Never silently: the choice is described, and a run with neither fails with both reasons.
import pg from "pg";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "./embedded-postgres.js";

export const DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres";
const PROBE_TIMEOUT_MS = 3_000;

export interface TestPostgres {
  /** Maintenance URL: test databases are created and dropped through it. */
  url: string;
  /** e.g. `external postgres://postgres@127.0.0.1:5432/postgres`, `embedded PostgreSQL 18.4 on ...`. */
  description: string;
  /** Stops the embedded server (a no-op for an external one). */
  stop(): Promise<void>;
}

/** The URL with any password masked, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "<an unparseable URL>";
  }
}

/** Undefined when `url` answers a query, else why not. */
export async function unreachableReason(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  try {
    await client.connect();
    await client.query("select 1");
    return undefined;
  } catch (err) {
    return (err as Error).message || (err as Error).name;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function postgresForTests(
  url: string = process.env.TEST_POSTGRES_URL || DEFAULT_POSTGRES_URL,
  startEmbedded: () => Promise<EmbeddedPostgres> = startEmbeddedPostgres,
): Promise<TestPostgres> {
  const reason = await unreachableReason(url);
  if (reason === undefined) return { url, description: `external ${redactUrl(url)}`, stop: async () => undefined };
  let embedded: EmbeddedPostgres;
  try {
    embedded = await startEmbedded();
  } catch (err) {
    throw new Error(
      `No PostgreSQL for the tests: ${redactUrl(url)} is not reachable (${reason}), and the embedded PostgreSQL did not start: ${(err as Error).message}`,
    );
  }
  return {
    url: embedded.url,
    description: `embedded PostgreSQL ${embedded.version} on 127.0.0.1:${embedded.port} (${redactUrl(url)} not reachable: ${reason})`,
    stop: () => embedded.stop(),
  };
}
