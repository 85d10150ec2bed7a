// Loads the key that seals webhook secrets, creating the key file (mode 0600) on first start.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Config } from "../config.js";

export function loadSecretsKey(source: Config["secretsKey"]): Buffer {
  if (source.kind === "value") return source.key;
  mkdirSync(dirname(source.path), { recursive: true });
  try {
    writeFileSync(source.path, randomBytes(32).toString("base64url") + "\n", { mode: 0o600, flag: "wx" });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  const key = Buffer.from(readFileSync(source.path, "utf8").trim(), "base64url");
  if (key.length !== 32) throw new Error(`${source.path} does not hold a 32-byte base64url key`);
  return key;
}
