// The ES256 keys that sign access tokens, kept in the database so every instance signs with the same
// key and verifies every other's tokens. The private part is sealed with SECRETS_KEY, bound to its kid
// (a key from before, plain JSON, is sealed in place at start: the release before, which reads it as
// JSON, then no longer starts on the database). The newest key signs; a replaced key verifies until its
// last token expired, then is deleted; a new one comes from `npm run rotate-signing-key` or every
// SIGNING_KEY_ROTATION_DAYS. Why: docs/operating.md, "Token signing keys".
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from "jose";
import type { BackgroundTask } from "../core/background-task.js";
import type { Clock } from "../core/clock.js";
import { base62 } from "../core/ids.js";
import type { Logger } from "../core/logger.js";
import { repeatedTask } from "../storage/background-failures.js";
import type { Storage } from "../storage/connect.js";
import type { Box, Sealed } from "../storage/secrets-key.js";
import { writeTransaction, type Db } from "../storage/transactions.js";

export const TOKEN_ALG = "ES256";

/** How often every instance reads the newest key again, rotates it when due and deletes the keys past their last token. */
export const SIGNING_KEYS_RELOAD_MS = 60_000;

/** An instance whose last read of the newest key is older than this reads it again before it signs (its reads failed, or lag). */
export const STALE_MS = 2 * SIGNING_KEYS_RELOAD_MS;

/** How far apart the clocks of the instances, and of the hosts that rotate keys, may be. */
const CLOCK_SKEW_MS = 60_000;

/** How long after its successor's creation, beyond the tokens' lifetime, a key still verifies: it may sign for STALE_MS more, dated by a clock off by CLOCK_SKEW_MS. */
export const RETIRE_MARGIN_MS = STALE_MS + CLOCK_SKEW_MS;

const DAY_MS = 86_400_000;

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
}

export interface SigningKeyOptions {
  /** ACCESS_TOKEN_TTL_SECONDS: the lifetime of the tokens a key signs. */
  tokenTtlSeconds: number;
  /** SIGNING_KEY_ROTATION_DAYS: the age at which the newest key is replaced; 0: never. */
  rotationDays: number;
}

interface KeyRow {
  kid: string;
  private_jwk: string;
  public_jwk: string;
  created_at: string;
}

/** A sealed private key opens only on its own row. */
const sealContext = (kid: string) => `signing-key:${kid}`;

const PLAIN = "{%";

export class SigningKeys {
  private signer: SigningKey | undefined;
  /** When this instance last read the keys, by its clock (taken before the read). */
  private readAt = -Infinity;
  private publicKeys = new Map<string, CryptoKey>();

  private constructor(
    private readonly storage: Storage,
    private readonly box: Box,
    private readonly clock: Clock,
    private readonly options: SigningKeyOptions,
  ) {}

  /** Seals the keys still plain, makes the first key on a database without one (once, whoever starts at the same time), and reads the newest. */
  static async load(storage: Storage, box: Box, clock: Clock, options: SigningKeyOptions): Promise<SigningKeys> {
    await sealPlainKeys(storage, box);
    // addKey decides again under the lock; the read first spares every later start a key pair made for nothing.
    if (!(await newestKey(storage.db))) await addKey(storage, box, clock, () => false);
    const keys = new SigningKeys(storage, box, clock, options);
    await keys.read();
    return keys;
  }

  /** The key to sign with: the newest, as read within STALE_MS. */
  async current(): Promise<SigningKey> {
    if (!this.signer || this.clock.now() - this.readAt > STALE_MS) await this.read();
    return this.signer!;
  }

  /** The public key for `kid`, read from the database once and then kept while the key exists. */
  async publicKey(kid: string): Promise<CryptoKey | undefined> {
    const kept = this.publicKeys.get(kid);
    if (kept) return kept;
    const row = await this.storage.db.selectFrom("signing_keys").select("public_jwk").where("kid", "=", kid).executeTakeFirst();
    if (!row) return undefined;
    const key = (await importJWK(JSON.parse(row.public_jwk) as JWK, TOKEN_ALG)) as CryptoKey;
    this.publicKeys.set(kid, key);
    return key;
  }

  /**
   * The background upkeep, every SIGNING_KEYS_RELOAD_MS: makes a new key when the newest is
   * SIGNING_KEY_ROTATION_DAYS old, deletes the keys whose last token has expired, and reads the
   * newest. Answers what it made and deleted, for the log.
   */
  async maintain(): Promise<{ rotated?: string; retired: string[] }> {
    const now = this.clock.now();
    let rows = await allKeys(this.storage.db);
    let rotated: string | undefined;
    const newest = rows.at(-1);
    if (newest && this.rotationDue(newest, now)) {
      const added = await addKey(this.storage, this.box, this.clock, (found) => this.rotationDue(found, now));
      if (added.made) rotated = added.kid;
      rows = await allKeys(this.storage.db);
    }
    const ttlMs = this.options.tokenTtlSeconds * 1000;
    const retired = rows.filter((_, i) => {
      const successor = rows[i + 1];
      return successor !== undefined && Date.parse(successor.created_at) + RETIRE_MARGIN_MS + ttlMs <= now;
    });
    const kids = retired.map((row) => row.kid);
    // Every instance deletes them; the one whose delete removed them says so.
    const deleted = kids.length > 0 ? Number((await this.storage.db.deleteFrom("signing_keys").where("kid", "in", kids).executeTakeFirst()).numDeletedRows) : 0;
    await this.use(rows.filter((row) => !kids.includes(row.kid)), now);
    return { ...(rotated ? { rotated } : {}), retired: deleted > 0 ? kids : [] };
  }

  private rotationDue(newest: KeyRow, now: number): boolean {
    return this.options.rotationDays > 0 && Date.parse(newest.created_at) + this.options.rotationDays * DAY_MS <= now;
  }

  private async read(): Promise<void> {
    const at = this.clock.now();
    await this.use(await allKeys(this.storage.db), at);
  }

  /** Signs with the newest of `rows` from now on, and forgets the public keys of the keys deleted. */
  private async use(rows: KeyRow[], readAt: number): Promise<void> {
    const newest = rows.at(-1);
    if (!newest) throw new Error("the database holds no access-token signing key");
    if (newest.kid !== this.signer?.kid) {
      const jwk = JSON.parse(this.box.open(newest.private_jwk, sealContext(newest.kid))) as JWK;
      this.signer = { kid: newest.kid, privateKey: (await importJWK(jwk, TOKEN_ALG)) as CryptoKey };
    }
    const live = new Set(rows.map((row) => row.kid));
    this.publicKeys = new Map([...this.publicKeys].filter(([kid]) => live.has(kid)));
    this.readAt = Math.max(this.readAt, readAt);
  }
}

/** Oldest first: the last one signs. */
const allKeys = (db: Db): Promise<KeyRow[]> => db.selectFrom("signing_keys").selectAll().orderBy("created_at").orderBy("kid").execute();

const newestKey = (db: Db): Promise<KeyRow | undefined> => db.selectFrom("signing_keys").selectAll().orderBy("created_at", "desc").orderBy("kid", "desc").limit(1).executeTakeFirst();

/**
 * Inserts a new key unless the table holds one and `due(newest)` is false, deciding under the
 * table's write lock: of callers that decide at once, one inserts and the others find its key.
 * Answers the newest key's kid then, and whether this call made it.
 */
async function addKey(storage: Storage, box: Box, clock: Clock, due: (newest: KeyRow) => boolean): Promise<{ kid: string; made: boolean }> {
  // Made before the transaction, so that its lock is not held while the key is generated.
  const kid = base62(12);
  const { privateKey, publicKey } = await generateKeyPair(TOKEN_ALG, { extractable: true });
  const values = {
    kid,
    private_jwk: box.seal(JSON.stringify(await exportJWK(privateKey)), sealContext(kid)),
    public_jwk: JSON.stringify(await exportJWK(publicKey)),
  };
  return writeTransaction(storage, { exclusive: ["signing_keys"] }, async (db) => {
    const newest = await newestKey(db);
    if (newest && !due(newest)) return { kid: newest.kid, made: false };
    // Never dated before the key it follows, whatever this host's clock says: the newest one signs.
    const createdAt = Math.max(clock.now(), newest ? Date.parse(newest.created_at) + 1 : 0);
    await db
      .insertInto("signing_keys")
      .values({ ...values, created_at: new Date(createdAt).toISOString() })
      .execute();
    return { kid, made: true };
  });
}

/** Seals every key still plain, each only while it is: instances starting at once each seal it (random IVs), and the first write stands. */
async function sealPlainKeys(storage: Storage, box: Box): Promise<void> {
  const plain = await storage.db.selectFrom("signing_keys").select(["kid", "private_jwk"]).where("private_jwk", "like", PLAIN).execute();
  for (const { kid, private_jwk } of plain) {
    await storage.db
      .updateTable("signing_keys")
      .set({ private_jwk: box.seal(private_jwk, sealContext(kid)) })
      .where("kid", "=", kid)
      .where("private_jwk", "=", private_jwk)
      .execute();
  }
}

/**
 * For a rollback to a release that reads the private parts as plain JSON only (storage/releases.ts):
 * opens every sealed key in place; the next start of a release that seals them seals them again.
 */
export async function unsealSigningKeys(db: Db, box: Box): Promise<number> {
  const sealed = await db.selectFrom("signing_keys").select(["kid", "private_jwk"]).where("private_jwk", "not like", PLAIN).execute();
  for (const { kid, private_jwk } of sealed) {
    await db.updateTable("signing_keys").set({ private_jwk: box.open(private_jwk, sealContext(kid)) }).where("kid", "=", kid).execute();
  }
  return sealed.length;
}

/**
 * `npm run rotate-signing-key`: a new key, which every instance signs with within STALE_MS.
 * Commands run at once make one key: each answers its kid, and whether it made it.
 */
export async function rotateSigningKey(storage: Storage, box: Box, clock: Clock): Promise<{ kid: string; made: boolean }> {
  const seen = await newestKey(storage.db);
  return addKey(storage, box, clock, (newest) => newest.kid === seen?.kid);
}

/** One signing key as sealed, for the secrets key's check at start. */
export async function sealedSigningKeySample(storage: Storage): Promise<Sealed | undefined> {
  const row = await storage.db.selectFrom("signing_keys").select(["kid", "private_jwk"]).where("private_jwk", "not like", PLAIN).limit(1).executeTakeFirst();
  return row && { sealed: row.private_jwk, context: sealContext(row.kid) };
}

/** Starts the keys' upkeep every `intervalMs`: rotated when due, retired when past use (SigningKeys.maintain). */
export const startKeyUpkeep = (keys: SigningKeys, logger: Logger, intervalMs = SIGNING_KEYS_RELOAD_MS): BackgroundTask =>
  repeatedTask(logger, intervalMs, "signing key upkeep", () => keys.maintain(), ({ rotated, retired }) => {
    if (rotated) logger.info({ msg: "signing key rotated", kid: rotated });
    if (retired.length > 0) logger.info({ msg: "signing keys retired", kids: retired });
  });
