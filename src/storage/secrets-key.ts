// The key that seals secrets kept in the database: loaded (the key file created on a first start
// outside production), and checked at every start against what the database holds sealed.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { ConfigError, StartRefused, type Config } from "../config.js";
import type { Storage } from "./connect.js";
import { sharedSetting } from "./settings.js";

export function loadSecretsKey(source: Config["secretsKey"]): Buffer {
  if (source.kind === "value") return source.key;
  if (source.create) {
    mkdirSync(dirname(source.path), { recursive: true });
    try {
      writeFileSync(source.path, randomBytes(32).toString("base64url") + "\n", { mode: 0o600, flag: "wx" });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
  }
  let text: string;
  try {
    text = readFileSync(source.path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    throw new ConfigError(`SECRETS_KEY_FILE ${source.path} does not exist (only a server's first start outside NODE_ENV=production creates it)`);
  }
  const key = Buffer.from(text.trim(), "base64url");
  if (key.length !== 32) throw new ConfigError(`${source.path} (SECRETS_KEY_FILE) does not hold a 32-byte base64url key`);
  return key;
}

/** A value sealed in the database, and the context it was sealed under. */
export interface Sealed {
  sealed: string;
  context: string;
}

/** What seals and opens them (the secret box of src/webhooks/secret-box.ts). */
export interface Box {
  seal(plain: string, context: string): string;
  open(sealed: string, context: string): string;
}

/** Sealed by the first instance that started on the database since the check exists; opened at every later start. */
const KEY_CHECK = { setting: "secrets_key_check", plain: "the secrets key of this database", context: "secrets-key-check" } as const;

export const keyName = (source: Config["secretsKey"]) => (source.kind === "value" ? "SECRETS_KEY" : `the key in ${source.path} (SECRETS_KEY_FILE)`);

/**
 * Refuses to start (StartRefused) unless `box` opens what the database holds sealed: the key check;
 * on a database without one yet, a value of each kind that `samples` finds (what was sealed before
 * the check existed), then the check is written. An instance with another key would otherwise serve
 * and answer 500 to every request that needs a sealed secret, and seal new ones that the other
 * instances cannot open. The message names no secret.
 */
export async function checkSecretsKey(storage: Storage, box: Box, source: Config["secretsKey"], samples: Record<string, () => Promise<Sealed | undefined>>): Promise<void> {
  const opens = ({ sealed, context }: Sealed) => {
    try {
      box.open(sealed, context);
      return true;
    } catch {
      return false;
    }
  };
  const found = await storage.db.selectFrom("settings").select("value").where("key", "=", KEY_CHECK.setting).executeTakeFirst();
  if (!found) {
    for (const [what, sample] of Object.entries(samples)) {
      const sealed = await sample();
      if (sealed && !opens(sealed)) throw refusal(source, what);
    }
  }
  const check = found?.value ?? (await sharedSetting(storage, KEY_CHECK.setting, () => box.seal(KEY_CHECK.plain, KEY_CHECK.context)));
  if (!opens({ sealed: check, context: KEY_CHECK.context })) throw refusal(source, "secrets");
}

const refusal = (source: Config["secretsKey"], what: string) =>
  new StartRefused(`${keyName(source)} does not open the ${what} sealed in the database: it is not the key they were sealed with. Start with that key (back it up with the database); a new key cannot open them`);
