// Migration 0015_listeners_version. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration } from "kysely";

// Issue 16: webhook listeners with their secrets and their automation's state, read by every
// delivery, cached per process (src/webhooks/listeners.ts).
export const m0015: Migration = {
  async up(db: Kysely<any>) {
    await db.insertInto("change_versions").values({ name: "listeners", version: 0 }).execute();
  },
};
