// On a database with no users, creates a super-admin and its credential: the configured
// BOOTSTRAP_CLIENT_ID/SECRET, or a generated pair written to a new file (BOOTSTRAP_CREDENTIAL_FILE;
// docs/operating.md, "Configuration"). A settings row claims the bootstrap, so instances starting
// together create it once. The claim, then the file, then the credential: a credential the database
// holds is always in the file, and a file that cannot be written releases the claim and refuses the
// start with nothing created.
import type { Config } from "../config.js";
import { StartRefused } from "../config.js";
import { secret256, base62 } from "../core/ids.js";
import type { Logger } from "../core/logger.js";
import type { Storage } from "../storage/connect.js";
import { writeCredentialFile } from "./credential-file.js";
import type { Credentials } from "./credentials.js";
import type { Users } from "./users.js";

const CLAIM = "bootstrapped";

export async function bootstrapAdmin(storage: Storage, users: Users, credentials: Credentials, bootstrap: Config["bootstrap"], logger: Logger): Promise<void> {
  if ((await users.count()) > 0) return;
  const claimed = await storage.db
    .insertInto("settings")
    .values({ key: CLAIM, value: new Date().toISOString() })
    .onConflict((oc) => oc.column("key").doNothing())
    .executeTakeFirst();
  if (Number(claimed.numInsertedOrUpdatedRows ?? 0) === 0) return;
  const pair = bootstrap.kind === "configured" ? { clientId: bootstrap.clientId, clientSecret: bootstrap.clientSecret } : { clientId: `c1_${base62(18)}`, clientSecret: secret256() };
  if (bootstrap.kind === "generated") {
    try {
      await writeCredentialFile(bootstrap.file, pair, "The bootstrap super-admin's credential, generated at the first start on its database");
    } catch (e) {
      await storage.db.deleteFrom("settings").where("key", "=", CLAIM).execute();
      throw new StartRefused(unwritable(bootstrap.file, e));
    }
  }
  const admin = await users.create({ displayName: "Bootstrap administrator", email: "admin@bootstrap.invalid", roles: ["ROLE_SUPER_ADMIN"] });
  await credentials.create(admin.id, { displayName: "bootstrap" }, { fixed: pair });
  if (bootstrap.kind === "configured") logger.info({ msg: "bootstrap super-admin created with BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET", clientId: pair.clientId });
  else logger.warn({ msg: "bootstrap super-admin created: its credential was generated and written to the file named, never to the log; keep it in your secret store, then delete the file", clientId: pair.clientId, file: bootstrap.file });
}

function unwritable(file: string, e: unknown): string {
  const instead = "or set BOOTSTRAP_CREDENTIAL_FILE to a path this process can create (or set BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET), and start again: no super-admin was made, the database has none yet";
  const { code, path } = e as NodeJS.ErrnoException;
  if (code === "EEXIST" && path === file) return `BOOTSTRAP_CREDENTIAL_FILE ${file} exists already, and a generated credential is never written over a file (it may hold another database's credential): move it away, ${instead}`;
  return `the bootstrap credential cannot be written to ${file} (BOOTSTRAP_CREDENTIAL_FILE): ${e instanceof Error ? e.message : String(e)}. Make it writable, ${instead}`;
}
