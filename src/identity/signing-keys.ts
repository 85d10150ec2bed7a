// The ES256 keys that sign access tokens live in the database, so every instance that shares it
// signs with the same key and verifies every other instance's tokens.
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from "jose";
import { base62 } from "../core/ids.js";
import type { Clock } from "../core/clock.js";
import type { Storage } from "../storage/connect.js";

export const TOKEN_ALG = "ES256";

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
}

export class SigningKeys {
  private readonly publicKeys = new Map<string, CryptoKey>();

  private constructor(
    private readonly storage: Storage,
    readonly current: SigningKey,
  ) {}

  /** Loads the oldest key, creating one if the database has none (first start wins on a race). */
  static async load(storage: Storage, clock: Clock): Promise<SigningKeys> {
    const existing = await storage.db.selectFrom("signing_keys").selectAll().orderBy("created_at").orderBy("kid").executeTakeFirst();
    if (!existing) {
      const { privateKey, publicKey } = await generateKeyPair(TOKEN_ALG, { extractable: true });
      await storage.db
        .insertInto("signing_keys")
        .values({
          kid: base62(12),
          private_jwk: JSON.stringify(await exportJWK(privateKey)),
          public_jwk: JSON.stringify(await exportJWK(publicKey)),
          created_at: new Date(clock.now()).toISOString(),
        })
        .execute();
      return SigningKeys.load(storage, clock);
    }
    const privateKey = (await importJWK(JSON.parse(existing.private_jwk) as JWK, TOKEN_ALG)) as CryptoKey;
    return new SigningKeys(storage, { kid: existing.kid, privateKey });
  }

  /** The public key for `kid`, read from the database once and then cached. */
  async publicKey(kid: string): Promise<CryptoKey | undefined> {
    const cached = this.publicKeys.get(kid);
    if (cached) return cached;
    const row = await this.storage.db.selectFrom("signing_keys").select("public_jwk").where("kid", "=", kid).executeTakeFirst();
    if (!row) return undefined;
    const key = (await importJWK(JSON.parse(row.public_jwk) as JWK, TOKEN_ALG)) as CryptoKey;
    this.publicKeys.set(kid, key);
    return key;
  }
}
