// Seeds rows straight into the database (never through the API), one transaction per
// `transactionRows` rows (multi-row INSERTs on SQLite, INSERT ... SELECT FROM unnest on
// PostgreSQL): subject-app rows, `users` users with `appsPerUser` rows each, and executions
// (finished ones long past their retention, or pending ones: a backlog). Rows copy what a row the
// server wrote holds, so they are exactly what the server would have stored.
import { sql } from "kysely";
import type { Storage } from "../src/storage/connect.js";
import type { AutomationExecutionsTable, SubjectAppLimitsTable, UsersTable } from "../src/storage/schema.js";

export interface SeedPlan {
  users: number;
  appsPerUser: number;
  /** The controls (JSON) and amount currency of every seeded row. */
  template: Pick<SubjectAppLimitsTable, "controls" | "amount_currency" | "suspended">;
  transactionRows?: number;
  statementRows?: number;
}

export interface SeedResult {
  users: number;
  rows: number;
  ms: number;
  /** How the rows went in. */
  method: string;
  /** PostgreSQL: the ANALYZE after the load (autovacuum would do it shortly after a bulk load). */
  analyzeMs: number;
}

const pad = (n: number, width: number) => String(n).padStart(width, "0");
export const seededUserId = (u: number): string => `bench-u${pad(u, 7)}`;
export const seededAppId = (a: number): string => `app-${pad(a, 3)}`;

type Row = Record<string, string | number | null>;

/**
 * Inserts `count` rows made by `make`, a transaction per `transactionRows`. SQLite: multi-row
 * INSERTs of `statementRows` rows (its statements hold at most 32,766 parameters). PostgreSQL: one
 * INSERT ... SELECT FROM unnest(...) per transaction, a column per array parameter (COPY-like).
 */
async function insertRows<R extends Row>(storage: Storage, table: "users" | "subject_app_limits" | "automation_executions", count: number, make: (i: number) => R, transactionRows: number, statementRows: number): Promise<void> {
  for (let start = 0; start < count; start += transactionRows) {
    const end = Math.min(count, start + transactionRows);
    await storage.db.transaction().execute(async (trx) => {
      if (storage.dialect === "postgres") {
        const rows: R[] = [];
        for (let i = start; i < end; i++) rows.push(make(i));
        const columns = Object.keys(rows[0]!);
        const arrays = columns.map((c) => {
          const values = rows.map((r) => r[c] ?? null);
          const type = values.some((v) => typeof v === "number") ? "int4[]" : "text[]";
          return sql`${values}::${sql.raw(type)}`;
        });
        await sql`insert into ${sql.table(table)} (${sql.join(columns.map((c) => sql.ref(c)))}) select * from unnest(${sql.join(arrays)})`.execute(trx);
        return;
      }
      for (let s = start; s < end; s += statementRows) {
        const rows: R[] = [];
        for (let i = s; i < Math.min(end, s + statementRows); i++) rows.push(make(i));
        await trx.insertInto(table).values(rows as never).execute();
      }
    });
  }
}

export async function seedSubjectAppLimits(storage: Storage, plan: SeedPlan): Promise<SeedResult> {
  const transactionRows = plan.transactionRows ?? 10_000;
  const statementRows = plan.statementRows ?? 1_000;
  const stamp = new Date().toISOString();
  const started = performance.now();

  await insertRows<UsersTable & Row>(
    storage,
    "users",
    plan.users,
    (u) => ({
      id: seededUserId(u),
      display_name: `Bench user ${u}`,
      email: `bench-u${u}@bench.example`,
      email_key: `bench-u${u}@bench.example`,
      roles: '["ROLE_USER"]',
      created_at: stamp,
      updated_at: stamp,
    }),
    transactionRows,
    statementRows,
  );

  const rows = plan.users * plan.appsPerUser;
  await insertRows<SubjectAppLimitsTable & Row>(
    storage,
    "subject_app_limits",
    rows,
    (i) => {
      const u = Math.floor(i / plan.appsPerUser);
      const a = i % plan.appsPerUser;
      return {
        id: `bs${pad(u, 7)}${pad(a, 3)}`,
        user_id: seededUserId(u),
        app_id: seededAppId(a),
        ...plan.template,
        created_at: stamp,
        updated_at: stamp,
        deleted_at: null,
      };
    },
    transactionRows,
    statementRows,
  );
  const ms = performance.now() - started;

  const analyzeStarted = performance.now();
  if (storage.dialect === "postgres") await sql`analyze users, subject_app_limits`.execute(storage.db);
  const method =
    storage.dialect === "postgres"
      ? `INSERT ... SELECT FROM unnest(column arrays), a transaction (and statement) per ${transactionRows.toLocaleString("en-US")} rows`
      : `multi-row INSERTs of ${statementRows.toLocaleString("en-US")} rows, a transaction per ${transactionRows.toLocaleString("en-US")} rows`;
  return { users: plan.users, rows, ms, method, analyzeMs: performance.now() - analyzeStarted };
}

export interface ExecutionSeed {
  automationId: string;
  count: number;
  /** Made unique to this seed, in each id: a database may hold several seeds. */
  tag: string;
  /** What every execution holds: those of one the server made (its state: PENDING, or one it ends in). */
  template: Pick<AutomationExecutionsTable, "context" | "steps" | "step_results" | "state">;
  /** The executions were made one after another over the day that ends here (ISO); finished when made unless pending. */
  madeBy: string;
}

/** Executions of one automation, `count` of them, as the server records them; answers how long the insert took (ms). */
export async function seedExecutions(storage: Storage, seed: ExecutionSeed): Promise<number> {
  const started = performance.now();
  const end = Date.parse(seed.madeBy);
  const step = (24 * 3_600_000) / seed.count;
  const pending = seed.template.state === "AUTOMATION_EXECUTION_STATE_PENDING";
  await insertRows<AutomationExecutionsTable & Row>(
    storage,
    "automation_executions",
    seed.count,
    (i) => {
      const at = new Date(Math.round(end - (seed.count - i) * step)).toISOString();
      return { id: `exe_bench${seed.tag}${pad(i, 9)}`, automation_id: seed.automationId, event_id: null, ...seed.template, created_at: at, completed_at: pending ? null : at, lease_until: null, attempts: pending ? 0 : 1 };
    },
    10_000,
    // 11 columns a row: within SQLite's 32,766 parameters.
    2_000,
  );
  if (storage.dialect === "postgres") await sql`analyze automation_executions`.execute(storage.db);
  return performance.now() - started;
}
