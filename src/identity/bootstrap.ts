// On a database with no users, creates a super-admin and its credential: the configured
// BOOTSTRAP_CLIENT_ID/SECRET, or a generated pair that is returned (to be printed once). A settings
// row claims the bootstrap, so instances starting together on one database create it only once.
import { secret256, base62 } from "../core/ids.js";
import type { Storage } from "../storage/connect.js";
import type { Credentials } from "./credentials.js";
import type { Users } from "./users.js";

export interface BootstrapResult {
  clientId: string;
  /** Present only when generated here; a configured secret is never echoed. */
  clientSecret?: string;
}

export async function bootstrapAdmin(
  storage: Storage,
  users: Users,
  credentials: Credentials,
  configured: { clientId: string; clientSecret: string } | null,
): Promise<BootstrapResult | null> {
  if ((await users.count()) > 0) return null;
  const claimed = await storage.db
    .insertInto("settings")
    .values({ key: "bootstrapped", value: new Date().toISOString() })
    .onConflict((oc) => oc.column("key").doNothing())
    .executeTakeFirst();
  if (Number(claimed.numInsertedOrUpdatedRows ?? 0) === 0) return null;
  const admin = await users.create({ displayName: "Bootstrap administrator", email: "admin@bootstrap.invalid", roles: ["ROLE_SUPER_ADMIN"] });
  const pair = configured ?? { clientId: `c1_${base62(18)}`, clientSecret: secret256() };
  await credentials.create(admin.id, { displayName: "bootstrap" }, { fixed: pair });
  return configured ? { clientId: pair.clientId } : pair;
}
