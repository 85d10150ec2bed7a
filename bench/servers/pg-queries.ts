// Sees every query the pg client library sends, as it sends it: a round trip each (the server
// pipelines none; a transaction's BEGIN travels with its first statement, src/storage/pg-deferred-begin.ts). Used by test/http/spends/round-trips.test.ts, and
// by the bench's round-trip count (bench/servers/round-trips.ts, preloaded into a server process).
import pg from "pg";

/** Calls `onQuery` with the client and the SQL text of every query sent from now on; answers a function that stops it. */
export function watchPgQueries(onQuery: (client: pg.Client, text: string) => void): () => void {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const [first] = args;
    onQuery(this, typeof first === "string" ? first : String((first as { text?: string }).text ?? first));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  return () => {
    pg.Client.prototype.query = query;
  };
}
