// Seals webhook signing secrets with AES-256-GCM under a key kept outside the database, so a
// database dump alone does not reveal them, and digests with a key derived from it what is kept of
// a secret only to recognise it again. The listener id is bound as associated data, so a
// sealed secret copied onto another listener does not open.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";
import { BoundedMap } from "../core/bounded-map.js";

const VERSION = "v1";

/** Secrets opened recently, kept so that the webhook intake does not decrypt on every request. */
const OPENED_CACHE_SIZE = 1024;

export class SecretBox {
  // Keyed by the sealed text and its context: a pure function of them under this box's key, so an
  // entry can never outlive its meaning. A secret removed from the database is no longer read, so
  // no longer looked up here.
  private readonly opened = new BoundedMap<string, string>({ entries: OPENED_CACHE_SIZE });

  /** The keys of `digest`, one per purpose, derived from this box's key. */
  private readonly digestKeys = new Map<string, Buffer>();

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error("the secrets key must be 32 bytes");
  }

  /**
   * A keyed digest of `plain` for `purpose` (HMAC-SHA256 under a key derived from this box's by
   * HKDF, never the sealing key itself): what is kept of a secret that need only be recognised
   * again. Without the secrets key, nothing of the secret can be tried against it.
   */
  digest(plain: string, purpose: string): string {
    let key = this.digestKeys.get(purpose);
    if (!key) {
      key = Buffer.from(hkdfSync("sha256", this.key, Buffer.alloc(0), `digest: ${purpose}`, 32));
      this.digestKeys.set(purpose, key);
    }
    return createHmac("sha256", key).update(plain, "utf8").digest("base64url");
  }

  seal(plain: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return [VERSION, iv.toString("base64url"), data.toString("base64url"), cipher.getAuthTag().toString("base64url")].join(".");
  }

  open(sealed: string, context: string): string {
    const key = `${context}\n${sealed}`;
    let plain = this.opened.get(key);
    if (plain === undefined) {
      plain = this.decrypt(sealed, context);
      this.opened.set(key, plain);
    }
    return plain;
  }

  private decrypt(sealed: string, context: string): string {
    const [version, iv, data, tag] = sealed.split(".");
    if (version !== VERSION || !iv || !data || !tag) throw new Error("unreadable sealed secret");
    const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
  }
}
