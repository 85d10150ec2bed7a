// The access-token signing keys, on the test database (SQLite, or PostgreSQL in that leg): their
// private parts are stored sealed with SECRETS_KEY (a key from before is sealed at start, and the
// tokens it signed still verify); a wrong key is refused naming them; `npm run rotate-signing-key`
// (a real process) and SIGNING_KEY_ROTATION_DAYS (a moved clock) make a new key that every instance
// signs with, while the old one verifies until its last token has expired and is then deleted; and
// instances rotating at once make one key. The servers run in-process, sharing a clock the test moves.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from "jose";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ManualClock } from "../../../src/core/clock.js";
import { createLogger } from "../../../src/core/logger.js";
import { RETIRE_MARGIN_MS, SigningKeys, STALE_MS } from "../../../src/identity/signing-keys.js";
import { startServer, type RunningServer } from "../../../src/server.js";
import { openStorage, type Storage } from "../../../src/storage/connect.js";
import { RELEASES } from "../../../src/storage/releases.js";
import { SecretBox } from "../../../src/webhooks/secret-box.js";
import { createTestDatabase, type TestDatabase } from "../../support/database.js";
import { OLD_ADMIN, withDatabase, writeOldAdmin, writeOldDatabase } from "../../support/old-database.js";
import { runRotateSigningKey, serveRelease, startToEnd } from "../../support/release.js";
import { accessToken, listUsers } from "./principal-cache-helpers.js";

const KEY = Buffer.alloc(32, 9).toString("base64url");
const WRONG_KEY = Buffer.alloc(32, 10).toString("base64url");
const ADMIN = { clientId: "keys-admin", clientSecret: "keys-admin-secret-0123456789" };
const BASE_URL = "http://tenant.keys.test";
const TTL_SECONDS = 600;
/** How often the test's servers read, rotate and retire their keys. */
const RELOAD_MS = 25;
const DAY_MS = 86_400_000;

const dir = mkdtempSync(join(tmpdir(), "tenant-signing-keys-"));
const databases: TestDatabase[] = [];
let servers: RunningServer[] = [];
const storages: Storage[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
  await Promise.all(storages.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  for (const database of databases) await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function database(): Promise<TestDatabase> {
  const made = await createTestDatabase(mkdtempSync(join(dir, "db-")));
  databases.push(made);
  return made;
}

/** A server on `url` with the test's key and `clock`, in this process. */
async function instance(url: string, clock: ManualClock, env: Record<string, string> = {}, reloadMs = RELOAD_MS): Promise<RunningServer> {
  const server = await startServer({
    config: loadConfig({
      PORT: "0",
      HOST: "127.0.0.1",
      BASE_URL,
      DATABASE_URL: url,
      SECRETS_KEY: KEY,
      BOOTSTRAP_CLIENT_ID: ADMIN.clientId,
      BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret,
      ACCESS_TOKEN_TTL_SECONDS: String(TTL_SECONDS),
      RATE_LIMIT: "off",
      LOG_LEVEL: "silent",
      ...env,
    }),
    clock,
    logger: createLogger("silent"),
    signingKeysReloadMs: reloadMs,
  });
  servers.push(server);
  return server;
}

interface KeyRow {
  kid: string;
  private_jwk: string;
  public_jwk: string;
  created_at: string;
}

const storedKeys = (url: string): Promise<KeyRow[]> => withDatabase(url, async (db) => (await db.selectFrom("signing_keys").selectAll().orderBy("created_at").orderBy("kid").execute()) as KeyRow[]);
const kids = async (url: string) => (await storedKeys(url)).map((k) => k.kid);

const kidOf = (token: string) => decodeProtectedHeader(token).kid;
const token = (server: RunningServer, admin = ADMIN) => accessToken(server.url, admin.clientId, admin.clientSecret);
const status = async (server: RunningServer, bearer: string) => (await listUsers(server.url, bearer)).status;
const expOf = (bearer: string) => (JSON.parse(Buffer.from(bearer.split(".")[1]!, "base64url").toString()) as { exp: number }).exp * 1000;

/** The private JWK of a stored key, opened as the server opens it; throws unless it is sealed with KEY and bound to `kid`. */
const opened = (row: KeyRow, kid = row.kid) => JSON.parse(new SecretBox(Buffer.from(KEY, "base64url")).open(row.private_jwk, `signing-key:${kid}`)) as JWK;

/** Several reads, rotations and retirements of every server. */
const afterUpkeep = () => new Promise((resolve) => setTimeout(resolve, RELOAD_MS * 10));

describe("the private parts of the signing keys", () => {
  it("are stored sealed with SECRETS_KEY, bound to their kid: no private parameter in clear, in the table or the database's files", async () => {
    const { url } = await database();
    const server = await instance(url, new ManualClock(Date.now()));
    const bearer = await token(server);
    const [row, ...others] = await storedKeys(url);
    expect(others).toEqual([]);
    expect(kidOf(bearer)).toBe(row!.kid);
    expect(row!.private_jwk.startsWith("{")).toBe(false);
    expect(row!.private_jwk).not.toContain('"d"');
    expect(() => JSON.parse(row!.private_jwk)).toThrow();
    expect(opened(row!)).toMatchObject({ kty: "EC", crv: "P-256", d: expect.any(String) });
    expect(() => opened(row!, "another-kid")).toThrow();
    expect(JSON.parse(row!.public_jwk)).not.toHaveProperty("d");
    if (url.startsWith("sqlite:")) {
      const path = url.slice("sqlite:".length);
      const files = [path, `${path}-wal`].filter(existsSync).map((file) => readFileSync(file));
      expect(files.length).toBeGreaterThan(0);
      for (const bytes of files) expect(bytes.includes('"d":"')).toBe(false);
      expect(files.some((bytes) => bytes.includes(row!.public_jwk)), "the file holds the keys' row where the test looked").toBe(true);
    }
    expect(await status(server, bearer)).toBe(200);
  });

  it("a plain key from a database of the release before is sealed by instances starting on it at once; the tokens it signed still verify, and it signs on", async () => {
    const { url } = await database();
    const clock = new ManualClock(Date.now());
    const at = new Date(clock.now() - 60_000).toISOString();
    const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
    const kid = "0ldSigningKey001";
    const plain = JSON.stringify(await exportJWK(privateKey));
    await writeOldDatabase(url, RELEASES.at(-1)!.lastMigration, async (db) => {
      await writeOldAdmin(db, at);
      await db.insertInto("signing_keys").values({ kid, private_jwk: plain, public_jwk: JSON.stringify(await exportJWK(publicKey)), created_at: at }).execute();
    });
    const now = Math.floor(clock.now() / 1000);
    const signedBefore = await new SignJWT({ cid: "0ldCredential001" })
      .setProtectedHeader({ alg: "ES256", kid, typ: "at+jwt" })
      .setIssuer(BASE_URL)
      .setAudience(BASE_URL)
      .setSubject(OLD_ADMIN.userId)
      .setIssuedAt(now)
      .setExpirationTime(now + TTL_SECONDS)
      .setJti("signed-before-001")
      .sign(privateKey);

    const [first, second] = await Promise.all([instance(url, clock), instance(url, clock)]);
    const [row, ...others] = await storedKeys(url);
    expect(others).toEqual([]);
    expect(row!.kid).toBe(kid);
    expect(row!.private_jwk.startsWith("{")).toBe(false);
    expect(JSON.stringify(opened(row!))).toBe(plain);
    for (const server of [first!, second!]) {
      expect(await status(server, signedBefore)).toBe(200);
      const bearer = await token(server, OLD_ADMIN);
      expect(kidOf(bearer)).toBe(kid);
      expect(await status(server, bearer)).toBe(200);
    }
  });

  it("a SECRETS_KEY that does not open them is refused (exit 2) naming them, when they alone are sealed; by the server and by the rotation command", { timeout: 180_000 }, async () => {
    const { url } = await database();
    const env = (secretsKey: string) => ({ DATABASE_URL: url, SECRETS_KEY: secretsKey, BOOTSTRAP_CLIENT_ID: ADMIN.clientId, BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret });
    const first = await serveRelease(env(KEY));
    await first.stop();
    // A database whose key check is gone (as before the check existed): what it holds sealed is tried, the signing key alone here.
    await withDatabase(url, (db) => db.deleteFrom("settings").where("key", "=", "secrets_key_check").execute());
    const before = await kids(url);

    const refused = await startToEnd(env(WRONG_KEY));
    expect(refused.code, refused.out).toBe(2);
    expect(refused.stderr).toContain("refusing to start: SECRETS_KEY does not open the signing keys sealed in the database");
    const rotation = await runRotateSigningKey({ DATABASE_URL: url, SECRETS_KEY: WRONG_KEY });
    expect(rotation.code, rotation.out).toBe(2);
    expect(rotation.stderr).toContain("refusing to start: SECRETS_KEY does not open the signing keys sealed in the database");
    for (const out of [refused.out, rotation.out]) for (const secret of [KEY, WRONG_KEY]) expect(out).not.toContain(secret);
    expect(await kids(url)).toEqual(before);
  });
});

describe("rotation", () => {
  it("npm run rotate-signing-key: every instance signs with the new key; the old one verifies until its last token expires, then is deleted and verifies nothing more", { timeout: 120_000 }, async () => {
    const { url } = await database();
    const clock = new ManualClock(Date.now());
    const [a, b] = [await instance(url, clock), await instance(url, clock)];
    // An instance whose reads of the keys lag (none in the background): it signs with the old key
    // until its last read is STALE_MS old, and the old key must verify its tokens too.
    const lagging = await instance(url, clock, {}, 3_600_000);
    const readAt = clock.now();
    const [oldKid] = await kids(url);
    const early = await token(a);
    expect(kidOf(early)).toBe(oldKid);

    const rotation = await runRotateSigningKey({ DATABASE_URL: url, SECRETS_KEY: KEY });
    expect(rotation.code, rotation.out).toBe(0);
    const newKid = /^new signing key ([A-Za-z0-9]+):/.exec(rotation.stdout)?.[1];
    expect(newKid, rotation.out).toBeDefined();
    expect(rotation.out).not.toMatch(/[{}]|"d"|"x"|"y"/);
    expect(rotation.out).not.toContain(KEY);
    const rows = await storedKeys(url);
    expect(rows.map((k) => k.kid)).toEqual([oldKid, newKid]);
    expect(opened(rows[1]!)).toHaveProperty("d");

    // The instances that read the keys every RELOAD_MS sign with it at their next read.
    for (const server of [a, b]) await expect.poll(async () => kidOf(await token(server)), { timeout: 5_000, interval: 20 }).toBe(newKid);
    expect(await status(b, early)).toBe(200);
    expect(await status(a, await token(b))).toBe(200);
    clock.set(readAt + STALE_MS);
    const straggler = await token(lagging);
    expect(kidOf(straggler)).toBe(oldKid);
    clock.set(readAt + STALE_MS + 1);
    expect(kidOf(await token(lagging)), "read again before it signs, once its last read is STALE_MS old").toBe(newKid);

    // A second before the last token of the old key expires, it still verifies, on an instance that never saw it.
    clock.set(expOf(straggler) - 1000);
    await afterUpkeep();
    expect(await kids(url)).toEqual([oldKid, newKid]);
    expect(await status(b, straggler)).toBe(200);
    const retiresAt = Date.parse(rows[1]!.created_at) + TTL_SECONDS * 1000 + RETIRE_MARGIN_MS;
    expect(retiresAt).toBeGreaterThan(expOf(straggler));
    clock.set(retiresAt - 1);
    await afterUpkeep();
    expect(await kids(url)).toEqual([oldKid, newKid]);
    expect(await status(a, straggler)).toBe(401);
    clock.set(retiresAt);
    await expect.poll(() => kids(url), { timeout: 5_000, interval: 20 }).toEqual([newKid]);
    for (const server of [a, b, lagging]) expect(await status(server, await token(server))).toBe(200);

    // Deleted, it verifies nothing more: not a token signed with it now (as with a key that leaked),
    // on an instance that had kept its public key.
    await afterUpkeep();
    const claims = JSON.parse(Buffer.from(early.split(".")[1]!, "base64url").toString()) as { sub: string; cid: string };
    const now = Math.floor(clock.now() / 1000);
    const forged = await new SignJWT({ cid: claims.cid })
      .setProtectedHeader({ alg: "ES256", kid: oldKid!, typ: "at+jwt" })
      .setIssuer(BASE_URL)
      .setAudience(BASE_URL)
      .setSubject(claims.sub)
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .setJti("forged-after-retirement")
      .sign(await importJWK(opened(rows[0]!), "ES256"));
    expect(await status(b, forged)).toBe(401);
  });

  it("SIGNING_KEY_ROTATION_DAYS: instances rotating at once make one key, which every instance signs with", { timeout: 120_000 }, async () => {
    const { url } = await database();
    const clock = new ManualClock(Date.now());
    const env = { SIGNING_KEY_ROTATION_DAYS: "1" };
    const [a, b] = await Promise.all([instance(url, clock, env), instance(url, clock, env)]);
    const [firstKid, ...others] = await kids(url);
    expect(others, "instances starting at once on a new database make one key").toEqual([]);

    clock.advance(DAY_MS - 60_000);
    await afterUpkeep();
    expect(await kids(url)).toEqual([firstKid]);

    clock.advance(60_000);
    await expect.poll(() => kids(url), { timeout: 5_000, interval: 20 }).toHaveLength(2);
    const [, secondKid] = await kids(url);
    for (const server of [a, b]) await expect.poll(async () => kidOf(await token(server)), { timeout: 5_000, interval: 20 }).toBe(secondKid);
    await afterUpkeep();
    expect(await kids(url)).toEqual([firstKid, secondKid]);

    // The next rotation, raced by the two servers and by six more instances' upkeep at once, each on
    // connections of its own; past the first key's last token, which is deleted.
    const config = loadConfig({ DATABASE_URL: url }).database;
    const box = new SecretBox(Buffer.from(KEY, "base64url"));
    const racers = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const storage = await openStorage(config);
        storages.push(storage);
        return SigningKeys.load(storage, box, clock, { tokenTtlSeconds: TTL_SECONDS, rotationDays: 1 });
      }),
    );
    clock.advance(DAY_MS);
    const results = await Promise.all(racers.map((keys) => keys.maintain()));
    await afterUpkeep();
    const after = await kids(url);
    expect(after, "one key made, the first deleted").toHaveLength(2);
    expect(after[0]).toBe(secondKid);
    expect(results.filter((r) => r.rotated).length).toBeLessThanOrEqual(1);
    for (const server of [a, b]) expect(kidOf(await token(server))).toBe(after[1]);
  });
});
