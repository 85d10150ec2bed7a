// API credentials (OAuth client id and secret) of a user. The secret is returned once at creation
// and stored only as a slow hash.
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import { recordAudit } from "../audit/audit-record.js";
import { credentialTarget } from "../audit/change.js";
import type { Origin } from "../core/origin.js";
import { invalidField, notFound } from "../core/errors.js";
import { base62, newId, secret256 } from "../core/ids.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import { recordChange, type ChangeWatch } from "../storage/change-versions.js";
import type { Storage } from "../storage/connect.js";
import type { CredentialsTable } from "../storage/schema.js";
import { writeTransaction, type BeforeCommit } from "../storage/transactions.js";
import { hashSecret } from "./secret-hash.js";
import type { Users } from "./users.js";

export type Credential = components["schemas"]["Credential"];
/** A created credential with its secret, shown this once. */
export type NewCredential = { credential: Credential; clientSecret: string };

const toCredential = (row: CredentialsTable): Credential => ({
  id: row.id,
  userId: row.user_id,
  clientId: row.client_id,
  displayName: row.display_name,
  appIds: JSON.parse(row.app_ids) as string[],
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
  lastUsedAt: row.last_used_at,
});

export class Credentials {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly users: Users,
    private readonly pageTokens: PageTokens,
    private readonly principals: ChangeWatch,
  ) {}

  /**
   * Creates a credential; `fixed` sets the client id and secret (the bootstrap credential). A
   * credential of a ROLE_APP_SERVICE user must be bound to apps, any other to none (the contract
   * already bounds their number and shape, and refuses a repeated id).
   */
  async create(
    userId: string,
    input: { displayName: string; appIds?: readonly string[] | undefined },
    options: { fixed?: { clientId: string; clientSecret: string }; beforeCommit?: BeforeCommit<NewCredential>; origin?: Origin } = {},
  ): Promise<NewCredential> {
    const { fixed, beforeCommit, origin } = options;
    const user = await this.users.get(userId);
    const appIds = input.appIds ?? [];
    if (user.roles.includes("ROLE_APP_SERVICE")) {
      if (appIds.length === 0) throw invalidField("body.appIds", "must name 1 to 100 apps: the user holds ROLE_APP_SERVICE", "APP_IDS_REQUIRED");
    } else if (appIds.length > 0) {
      throw invalidField("body.appIds", "must be absent or empty: the user does not hold ROLE_APP_SERVICE", "APP_IDS_NOT_ALLOWED");
    }
    const clientSecret = fixed?.clientSecret ?? secret256();
    const row: CredentialsTable = {
      id: newId(),
      user_id: userId,
      client_id: fixed?.clientId ?? `c1_${base62(18)}`,
      secret_hash: await hashSecret(clientSecret),
      display_name: input.displayName,
      app_ids: JSON.stringify(appIds),
      created_at: new Date(this.clock.now()).toISOString(),
      revoked_at: null,
      last_used_at: null,
    };
    return writeTransaction(this.storage, { exclusive: [] }, async (db) => {
      await db.insertInto("credentials").values(row).execute();
      const created = { credential: toCredential(row), clientSecret };
      // The credential as listed: its secret is not part of it.
      await recordAudit(db, origin, Date.parse(row.created_at), { operationId: "svc.api.iam.v1.CredentialService.Create", target: credentialTarget(userId, row.id), before: null, after: created.credential });
      await beforeCommit?.(db, created);
      return created;
    }, { origin });
  }

  /** Ordered by creation time, then id. */
  async list(userId: string, size: number | undefined, token: string | undefined): Promise<Page<Credential>> {
    await this.users.get(userId);
    const scope = `credentials:${userId}`;
    const after = this.pageTokens.decode(scope, token, "query.page_token", 2);
    const limit = pageSize(size);
    let query = this.storage.db
      .selectFrom("credentials")
      .selectAll()
      .where("user_id", "=", userId)
      .orderBy("created_at")
      .orderBy("id")
      .limit(limit + 1);
    if (after) {
      const [at, id] = after.map(String) as [string, string];
      query = query.where((eb) => eb.or([eb("created_at", ">", at), eb.and([eb("created_at", "=", at), eb("id", ">", id)])]));
    }
    return this.pageTokens.page(scope, await query.execute(), limit, (r) => [r.created_at, r.id], toCredential);
  }

  /**
   * Idempotent: a second revoke keeps the first revokedAt. The principals' version moves with the
   * revocation, so every instance stops trusting the tokens' cached principals (access-tokens.ts).
   */
  async revoke(userId: string, credentialId: string, origin?: Origin): Promise<Credential> {
    const at = this.clock.now();
    const now = new Date(at).toISOString();
    const revoked = await writeTransaction(this.storage, { exclusive: [] }, async (db) => {
      const before = await db.selectFrom("credentials").selectAll().where("id", "=", credentialId).where("user_id", "=", userId).executeTakeFirst();
      if (!before || before.revoked_at !== null) return false;
      const { numUpdatedRows } = await db
        .updateTable("credentials")
        .set({ revoked_at: now })
        .where("id", "=", credentialId)
        .where("user_id", "=", userId)
        .where("revoked_at", "is", null)
        .executeTakeFirst();
      if (numUpdatedRows === 0n) return false;
      await recordChange(db, "principals");
      const target = credentialTarget(userId, credentialId);
      await recordAudit(db, origin, at, { operationId: "svc.api.iam.v1.CredentialService.Revoke", target, before: toCredential(before), after: toCredential({ ...before, revoked_at: now }) });
      return true;
    }, { origin });
    if (revoked) this.principals.changedHere();
    const row = await this.storage.db.selectFrom("credentials").selectAll().where("id", "=", credentialId).where("user_id", "=", userId).executeTakeFirst();
    if (!row) throw notFound("CREDENTIAL_NOT_FOUND", "no credential with this id for this user", { metadata: { credentialId } });
    return toCredential(row);
  }

  async findByClientId(clientId: string): Promise<CredentialsTable | undefined> {
    return this.storage.db.selectFrom("credentials").selectAll().where("client_id", "=", clientId).executeTakeFirst();
  }

  async markUsed(id: string): Promise<void> {
    await this.storage.db.updateTable("credentials").set({ last_used_at: new Date(this.clock.now()).toISOString() }).where("id", "=", id).execute();
  }
}
