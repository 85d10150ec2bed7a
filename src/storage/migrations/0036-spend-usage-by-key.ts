// Migration 0036_spend_usage_by_key. Frozen once released: a change is a new migration.
// The release before: the same functions, planned otherwise (PostgreSQL; nothing on SQLite): it runs.
import { type Kysely, type Migration, sql } from "kysely";

// Why: every statement of the spend functions on spend_usage names one subject and app, and the
// usage table's primary key begins with them; yet while the table is small (a tenant with a few
// hundred windows, the bench's hundred) its statistics make a sequential scan the cheaper plan, and
// the generic plan a PL/pgSQL statement keeps then reads every window's row, filtering each by text
// comparisons, and on a table whose rows are updated at every decision, every dead version too. An
// approved one-call decision replayed by pgbench (one client, a hundred windows, runs of 5 s
// alternated four times) took 0.27 to 0.35 ms a call planned so, against 0.32 to 0.39 ms. A
// function's SET is replaced by a CREATE OR REPLACE without it: test/storage/spend-usage-plans.test.ts
// fails until such a migration sets it again.
export const m0036 = (dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== "postgres") return;
    await sql`
      do $$
      declare f regprocedure;
      begin
        for f in select p.oid::regprocedure from pg_proc p
          where p.pronamespace = 'public'::regnamespace and p.prolang = (select oid from pg_language where lanname = 'plpgsql')
            and p.prosrc ~ '\\m(from|update|into)\\s+spend_usage\\M'
        loop
          execute format('alter function %s set enable_seqscan = off', f);
        end loop;
      end
      $$`.execute(db);
  },
});
