// Migration 0017_spends_currency_index_dropped. Frozen once released: a change is a new migration.
// The release before: its CURRENCY_IN_USE check reads spend_authorizations until its first row: it
// runs.
import { type Kysely, type Migration } from "kysely";

// Every spend is in the fund policy's currency: a decision stores the currency it read under the
// policy's shared lock, and a currency change (under the exclusive one) is refused while any spend
// exists. So the CURRENCY_IN_USE check asks whether any spend exists at all, the first row of the
// table, and this index (one B-tree more for every decision to write) serves nothing. An instance of the earlier release
// asking it during a currency change reads spend_authorizations until its first spend (every one is
// in the old currency), then stops.
export const m0017: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.dropIndex("spend_authorizations_by_currency").execute();
  },
};
