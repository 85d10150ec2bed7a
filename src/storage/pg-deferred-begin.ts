// PostgreSQL: a transaction's BEGIN travels with its first statement when it can, one round trip
// less. node-postgres sends one query at a time, and several statements in one query are allowed
// only without parameters (the simple query protocol); so the pool's clients hold BEGIN back until
// the transaction's first statement, and send both as one query when that statement has no
// parameters (written so on purpose: `inlineParameters`). Why: bench/RESULTS.md, "Spend decisions".
import type { CompiledQuery, PostgresPool, PostgresPoolClient, PostgresQueryResult } from "kysely";
import pg from "pg";
import type { Connection, Connections } from "./pg-connection-faults.js";
import { sendStatement } from "./pg-named-statements.js";

const TRANSACTION_START = /^(begin|start transaction)\b/i;
const TRANSACTION_END = /^(commit|rollback)$/i;

/** What a BEGIN held back answers: nothing was sent. */
const NOTHING = { command: "SELECT", rowCount: 0, rows: [] } as unknown as PostgresQueryResult<never>;

/** `pool` for Kysely, its clients deferring BEGIN as above. */
export function deferringBegin(pool: Connections): PostgresPool {
  // One wrapper per client: Kysely keeps its connection object by client.
  const wrappers = new WeakMap<Connection, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = deferringClient(client);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

function deferringClient(client: Connection): PostgresPoolClient {
  /** The BEGIN (or START TRANSACTION) not sent yet. */
  let begin: string | undefined;
  const run = async (text: string, parameters: readonly unknown[]): Promise<PostgresQueryResult<unknown>> => {
    if (parameters.length === 0 && TRANSACTION_START.test(text) && begin === undefined) {
      begin = text;
      return NOTHING;
    }
    if (begin === undefined) return sendStatement(client, text, parameters) as unknown as PostgresQueryResult<unknown>;
    const held = begin;
    begin = undefined;
    // A transaction that ran no statement: there is nothing to end.
    if (TRANSACTION_END.test(text)) return NOTHING;
    if (parameters.length > 0) {
      await client.query(held);
      return sendStatement(client, text, parameters) as unknown as PostgresQueryResult<unknown>;
    }
    // One simple query: node-postgres answers one result per statement.
    const results = (await client.query(`${held};\n${text}`)) as unknown as pg.QueryResult[];
    return results[results.length - 1] as unknown as PostgresQueryResult<unknown>;
  };
  return {
    query: ((textOrCursor: unknown, parameters?: readonly unknown[]) =>
      typeof textOrCursor === "string" ? run(textOrCursor, parameters ?? []) : client.query(textOrCursor as pg.Submittable)) as PostgresPoolClient["query"],
    release: () => {
      begin = undefined;
      client.release();
    },
  };
}

/**
 * `query` (compiled for PostgreSQL) with its parameters written into its text as quoted literals,
 * so that it can travel with a held-back BEGIN. Only for a statement of ours whose text has no `$`
 * other than its placeholders, and whose parameters are strings, bigints, booleans or nulls.
 */
export function inlineParameters(query: CompiledQuery): CompiledQuery {
  const sql = query.sql.replace(/\$(\d+)/g, (_, n: string) => {
    const value = query.parameters[Number(n) - 1];
    if (value === null) return "null";
    if (typeof value === "boolean") return String(value);
    // In parentheses: a negative amount stays one operand wherever it stands.
    if (typeof value === "bigint") return `(${value})`;
    if (typeof value !== "string") throw new Error(`inlineParameters: parameter $${n} is neither a string, a bigint nor a boolean`);
    return pg.escapeLiteral(value);
  });
  return { ...query, sql, parameters: [] };
}
