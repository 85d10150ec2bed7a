// API credentials (OAuth client id and secret) of a user. The secret is returned once at creation
// and stored only as a slow hash.
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import { notFound } from "../core/errors.js";
import { base62, newId, secret256 } from "../core/ids.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { Storage } from "../storage/connect.js";
import type { CredentialsTable } from "../storage/schema.js";
import { hashSecret } from "./secret-hash.js";
import type { Users } from "./users.js";

export type Credential = components["schemas"]["Credential"];

const toCredential = (row: CredentialsTable): Credential => ({
  id: row.id,
  userId: row.user_id,
  clientId: row.client_id,
  displayName: row.display_name,
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
  ) {}

  /** Creates a credential; `fixed` sets the client id and secret (the bootstrap credential). */
  async create(userId: string, displayName: string, fixed?: { clientId: string; clientSecret: string }): Promise<{ credential: Credential; clientSecret: string }> {
    await this.users.get(userId);
    const clientSecret = fixed?.clientSecret ?? secret256();
    const row: CredentialsTable = {
      id: newId(),
      user_id: userId,
      client_id: fixed?.clientId ?? `c1_${base62(18)}`,
      secret_hash: await hashSecret(clientSecret),
      display_name: displayName,
      created_at: new Date(this.clock.now()).toISOString(),
      revoked_at: null,
      last_used_at: null,
    };
    await this.storage.db.insertInto("credentials").values(row).execute();
    return { credential: toCredential(row), clientSecret };
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

  /** Idempotent: a second revoke keeps the first revokedAt. */
  async revoke(userId: string, credentialId: string): Promise<Credential> {
    const now = new Date(this.clock.now()).toISOString();
    await this.storage.db
      .updateTable("credentials")
      .set({ revoked_at: now })
      .where("id", "=", credentialId)
      .where("user_id", "=", userId)
      .where("revoked_at", "is", null)
      .execute();
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
