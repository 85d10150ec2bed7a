// Migration 0011_fund_policy_version. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration } from "kysely";

// Issue 16: the fund policy, read by every policy and effective-limit read, cached per process.
export const m0011: Migration = {
  async up(db: Kysely<any>) {
    await db.insertInto("change_versions").values({ name: "fund_policy", version: 0 }).execute();
  },
};
