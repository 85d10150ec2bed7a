// --statements (PostgreSQL): what each scenario's statements cost PostgreSQL, from pg_stat_statements
// (track = all, so that the statements of the spend functions are counted apart from the calls that
// run them). The load generator resets the counters when the measured run starts and reads them when
// it ends, so that warm-up is not in them. Times are the executor's, in wall time: under the bench's
// load they include waits for locks and for a core, and a function's includes the statements it runs.
import { withAdminClient } from "../scripts/scratch-database.js";

/** Where the counters are read: the database the extension is created in, and the one measured. */
export interface StatementsSource {
  adminUrl: string;
  database: string;
}

/** One statement's cost per answer of the measured run. */
export interface StatementCost {
  query: string;
  /** False for a statement run inside a function (its time is also in the function's). */
  toplevel: boolean;
  callsPerAnswer: number;
  microsPerAnswer: number;
  microsPerCall: number;
}

/** How many of a scenario's statements are kept, the costliest: enough to say where its time goes. */
const SHOWN = 16;

/** Refuses to start a run that could not report its statements: the extension needs the server's preload list. */
export async function checkStatements(adminUrl: string): Promise<void> {
  await withAdminClient(adminUrl, async (c) => {
    const { rows } = await c.query<{ preload: string; track: string | null }>(
      "select current_setting('shared_preload_libraries') as preload, current_setting('pg_stat_statements.track', true) as track",
    );
    const row = rows[0];
    if (!row?.preload.split(",").some((l) => l.trim() === "pg_stat_statements")) {
      throw new Error("--statements needs PostgreSQL started with shared_preload_libraries = 'pg_stat_statements' (see docs/benchmarks.md)");
    }
    if (row.track !== "all") throw new Error(`--statements needs pg_stat_statements.track = all (it is ${row.track ?? "unset"}), so that the functions' statements are counted`);
    await c.query("create extension if not exists pg_stat_statements");
  });
}

export const resetStatements = (source: StatementsSource): Promise<void> =>
  withAdminClient(source.adminUrl, async (c) => {
    await c.query("select pg_stat_statements_reset()");
  });

/** The measured database's statements since the reset, the costliest first, per answer of the run. */
export const readStatements = (source: StatementsSource, answers: number): Promise<StatementCost[]> =>
  withAdminClient(source.adminUrl, async (c) => {
    const { rows } = await c.query<{ query: string; toplevel: boolean; calls: string; total_ms: number }>(
      `select regexp_replace(s.query, '\\s+', ' ', 'g') as query, s.toplevel, s.calls::text as calls, s.total_exec_time as total_ms
       from pg_stat_statements s join pg_database d on d.oid = s.dbid
       where d.datname = $1 order by s.total_exec_time desc limit ${SHOWN}`,
      [source.database],
    );
    return rows.map((r) => {
      const calls = Number(r.calls);
      return {
        query: r.query,
        toplevel: r.toplevel,
        callsPerAnswer: answers > 0 ? calls / answers : Number.NaN,
        microsPerAnswer: answers > 0 ? (r.total_ms * 1000) / answers : Number.NaN,
        microsPerCall: calls > 0 ? (r.total_ms * 1000) / calls : Number.NaN,
      };
    });
  });
