// Queries of the hot paths (the webhook intake, the execution worker, spend decisions) built with
// Kysely's typed builder once and compiled once per dialect, each run binding its values in the
// places the compiled SQL has for them; on PostgreSQL sent as named statements
// (./pg-named-statements.ts). The builder gets marked stand-ins for the values, found again among
// the compiled parameters, so a query must use each value as a plain parameter, not spread into a
// list. Why: bench/RESULTS.md, "The webhook intake".
import { PostgresAdapter, type Compilable, type CompiledQuery, type Kysely } from "kysely";
import { inlineParameters } from "./pg-deferred-begin.js";
import { nameStatement } from "./pg-named-statements.js";
import type { Database } from "./schema.js";

type Db = Kysely<Database>;

interface Compiled {
  query: CompiledQuery;
  /** For each parameter, the binding it takes, or the constant the builder put there. */
  slots: ReadonlyArray<{ binding: string } | { constant: unknown }>;
}

const STAND_IN = "\u0000binding:";

const standIns = new Proxy({}, { get: (_target, name) => STAND_IN + String(name) });

type Result<R> = Promise<{ rows: R[]; numAffectedRows: bigint | undefined }>;

export interface Prepared<B extends object, R> {
  execute(db: Db, values: B): Result<R>;
  /** PostgreSQL only: run with the values written in as literals, so that it can carry a transaction's BEGIN (./pg-deferred-begin.ts). */
  executeInlined(db: Db, values: B): Result<R>;
}

/** A query compiled on first use with each dialect, over the values of `B` it reads. */
export function prepared<B extends object, R>(build: (db: Db, values: B) => Compilable<R>): Prepared<B, R> {
  // Keyed by the dialect's adapter: shared by a Kysely instance and its transactions, and different
  // for SQLite and PostgreSQL, whose SQL differs.
  const byDialect = new WeakMap<object, Compiled>();
  const compile = (db: Db): Compiled => {
    const query = build(db, standIns as B).compile();
    if (db.getExecutor().adapter instanceof PostgresAdapter) nameStatement(query.sql);
    const slots = query.parameters.map((p) => (typeof p === "string" && p.startsWith(STAND_IN) ? { binding: p.slice(STAND_IN.length) } : { constant: p }));
    return { query, slots };
  };
  const bind = (db: Db, values: B): CompiledQuery<R> => {
    const adapter = db.getExecutor().adapter;
    let compiled = byDialect.get(adapter);
    if (!compiled) {
      compiled = compile(db);
      byDialect.set(adapter, compiled);
    }
    const { query, slots } = compiled;
    const bound = values as Record<string, unknown>;
    const parameters = slots.map((s) => {
      if (!("binding" in s)) return s.constant;
      if (!(s.binding in bound)) throw new Error(`prepared query: no value for "${s.binding}" in ${query.sql}`);
      return bound[s.binding];
    });
    return { ...query, parameters } as CompiledQuery<R>;
  };
  const run = async (db: Db, query: CompiledQuery<R>) => {
    const result = await db.executeQuery<R>(query);
    return { rows: result.rows, numAffectedRows: result.numAffectedRows };
  };
  return {
    execute: async (db, values) => run(db, bind(db, values)),
    executeInlined: async (db, values) => run(db, inlineParameters(bind(db, values)) as CompiledQuery<R>),
  };
}
