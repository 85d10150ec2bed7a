// `npm run generate:postgres-functions`: migrates a scratch PostgreSQL database (TEST_POSTGRES_URL, or
// the machine's at 127.0.0.1:5432) and writes its functions and triggers to src/storage/postgres-functions.sql,
// the readable snapshot that test/storage/postgres-functions.test.ts holds to the migrations.
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { migrateDatabase } from "../src/storage/migrate-up.js";
import { postgresFunctions } from "./database-schema.js";
import { createScratchDatabase } from "./scratch-database.js";

export const POSTGRES_FUNCTIONS_PATH = resolve(import.meta.dirname, "../src/storage/postgres-functions.sql");

const HEADER = `-- A SNAPSHOT, not a source: every PostgreSQL function and trigger as the migrations leave them
-- (src/storage/migrations/), read back from a freshly migrated database, to read in one place what
-- a decision runs. Written by \`npm run generate:postgres-functions\`; never edited by hand: a change
-- is a new migration, then this file generated again (a test fails until it is).
`;

/** The snapshot's text for a freshly migrated scratch database on the server `adminUrl` names. */
export async function postgresFunctionsSnapshot(adminUrl: string): Promise<string> {
  const scratch = await createScratchDatabase(adminUrl, "tenant_functions");
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: scratch.url, max: 2 }) }) });
  try {
    await migrateDatabase(db, "postgres", true);
    return `${HEADER}\n${await postgresFunctions(db)}`;
  } finally {
    await db.destroy();
    await scratch.drop();
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const adminUrl = process.env.TEST_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/postgres";
  writeFileSync(POSTGRES_FUNCTIONS_PATH, await postgresFunctionsSnapshot(adminUrl));
  process.stdout.write(`wrote ${POSTGRES_FUNCTIONS_PATH}\n`);
}
