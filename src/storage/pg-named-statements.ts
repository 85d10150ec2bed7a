// PostgreSQL parses and plans an unnamed statement on every run. The hot queries (./prepared.ts)
// have fixed texts, so they are sent as named statements: parsed once per connection, and planned
// once too where PostgreSQL finds a generic plan as good (plan_cache_mode auto). Only registered
// texts are named: a text built anew per request (a list of varying length) would leave a statement
// behind on the connection for each variant. Why: bench/RESULTS.md, "The webhook intake".
import type pg from "pg";

const names = new Map<string, string>();

/** Sends `text` as a named statement from now on (a fixed text with placeholders). */
export function nameStatement(text: string): void {
  if (!names.has(text)) names.set(text, `tenant_api_${names.size}`);
}

/** Sends `text` on `client`: named if it was registered and has values to bind, else as it is. */
export function sendStatement(client: Pick<pg.PoolClient, "query">, text: string, values: readonly unknown[]): Promise<pg.QueryResult> {
  const name = values.length > 0 ? names.get(text) : undefined;
  return name === undefined ? client.query(text, [...values]) : client.query({ name, text, values: [...values] });
}
