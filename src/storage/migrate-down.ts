// A rollback without a restore (`npm run migrate -- --down-to <release>`): makes the database one
// that an earlier release starts and runs on, changing no more than that release needs. A migration
// that release runs with stays applied; one it does not run with is undone by its own `down` (one
// without refuses the rollback before anything changes); for a release that predates the records
// the kept ones are hidden from Kysely's check, and the caller's `legacy` runs last. The servers of
// this release are stopped first. docs/operating.md, "Upgrading".
import { sql, type Kysely } from "kysely";
import { StartRefused } from "../config.js";
import { compatibleFrom, underMigrationLock, type MigrationPlan } from "./migrate-up.js";
import { forgetApplied, hideApplied, readState } from "./migration-records.js";
import { inMigrationTransaction, MIGRATION_TRANSACTION_DEFAULTS, type MigrationTransactionOptions } from "./migration-transaction.js";
import type { MigrationStep } from "./migrations/migration-list.js";
import type { Release } from "./releases.js";

export interface DownTo {
  /** Undone, newest first. */
  undone: string[];
  /** Kept applied: the release runs with them. */
  kept: string[];
  /** Of the kept, those hidden from the release's check of kysely_migration. */
  hidden: string[];
}

export interface DownOptions extends MigrationTransactionOptions {
  /** What the release reads that the schema is not, brought to its form in a transaction of its own (after the schema). */
  legacy?: (db: Kysely<any>) => Promise<void>;
}

/** SQLite: refuses while another process has the file open, then keeps it to this connection until it closes (exclusive locking mode). */
async function holdAlone(db: Kysely<any>): Promise<void> {
  await db.connection().execute(async (connection) => {
    await sql`pragma busy_timeout = 0`.execute(connection);
    await sql`pragma locking_mode = exclusive`.execute(connection);
    try {
      await sql`begin exclusive`.execute(connection);
      await sql`commit`.execute(connection);
    } catch (e) {
      if ((e as { code?: string }).code !== "SQLITE_BUSY") throw e;
      throw new StartRefused("the database is open in another process, a server most likely: stop every server on it, then roll back");
    }
  });
}

function planDown(plan: MigrationPlan, release: Release, applied: readonly string[], recorded: ReadonlyMap<string, string>): { undo: MigrationStep[]; keep: MigrationStep[] } {
  const known = new Set(plan.steps.map((s) => s.name));
  const later = applied.filter((n) => !known.has(n));
  if (later.length > 0) throw new StartRefused(`the database has migration ${later[0]} of a later release: roll back with that release's \`npm run migrate -- --down-to\` first`);
  if (!known.has(release.lastMigration)) throw new StartRefused(`release ${release.commit.slice(0, 7)} knows migrations this release does not (up to ${release.lastMigration}): it is not an earlier release`);
  const beyond = plan.steps.filter((s) => applied.includes(s.name) && s.name > release.lastMigration).reverse();
  const runsWith = (s: MigrationStep) => (recorded.get(s.name) ?? compatibleFrom(s, plan.releases)) <= release.lastMigration;
  const undo = beyond.filter((s) => !runsWith(s));
  const stuck = undo.filter((s) => !s.migration.down);
  if (stuck.length > 0) {
    throw new StartRefused(`release ${release.commit.slice(0, 7)} does not run on a database where ${stuck.map((s) => s.name).join(", ")} ${stuck.length === 1 ? "was" : "were"} applied, and ${stuck.length === 1 ? "it" : "they"} cannot be undone (its file in src/storage/migrations/ says why): restore the backup taken before the upgrade`);
  }
  return { undo, keep: beyond.filter(runsWith) };
}

/** Makes the database one `release` runs on (see above); refuses (StartRefused), changing nothing, when it cannot be. */
export async function migrateDownTo(db: Kysely<any>, dialect: "sqlite" | "postgres", release: Release, plan: MigrationPlan, options: DownOptions = MIGRATION_TRANSACTION_DEFAULTS): Promise<DownTo> {
  if (dialect === "sqlite") await holdAlone(db);
  return underMigrationLock(db, dialect, async () => {
    const state = await readState(db, dialect);
    const { undo, keep } = planDown(plan, release, state.applied, state.compatibleFrom);
    for (const step of undo) {
      await inMigrationTransaction(db, dialect, step, async (trx) => {
        await step.migration.down!(trx);
        await forgetApplied(trx, step.name);
      }, options);
    }
    const hidden = release.refusesUnknownMigrations ? keep.filter((s) => state.named.has(s.name)).map((s) => s.name) : [];
    await inMigrationTransaction(db, dialect, { name: "(the records of migrations)", locks: [] }, async (trx) => {
      for (const name of hidden) await hideApplied(trx, name);
      await options.legacy?.(trx);
    }, options);
    return { undone: undo.map((s) => s.name), kept: keep.map((s) => s.name), hidden };
  });
}
