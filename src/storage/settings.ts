// Instance-independent secrets kept in the database, created by whichever instance asks first.
import { randomBytes } from "node:crypto";
import type { Storage } from "./connect.js";

/** The value of `key`, created from `make()` if absent; every instance reads the same value. */
export async function sharedSetting(storage: Storage, key: string, make: () => string): Promise<string> {
  await storage.db.insertInto("settings").values({ key, value: make() }).onConflict((oc) => oc.column("key").doNothing()).execute();
  const row = await storage.db.selectFrom("settings").select("value").where("key", "=", key).executeTakeFirstOrThrow();
  return row.value;
}

export async function sharedKey(storage: Storage, key: string): Promise<Buffer> {
  return Buffer.from(await sharedSetting(storage, key, () => randomBytes(32).toString("base64url")), "base64url");
}
