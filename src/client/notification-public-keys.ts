// The asymmetric half of verifyNotification (verify-notification.ts): `v1a,` signatures, Ed25519 over
// `{webhook-id}.{webhook-timestamp}.{body}`, checked with the automation's published `whpk_` public
// keys (Standard Webhooks). WebCrypto only (Ed25519 verify: Node 20+, current browsers).

const PREFIX = "whpk_";
const KEY_BYTES = 32;
const SIGNATURE_BYTES = 64;

/** Bytes of standard base64, or undefined when it is not base64. */
function base64Bytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** The raw key of a `whpk_<base64>` public key. A malformed key is the caller's error (TypeError), never shown. */
export function publicKeyBytes(publicKey: string, index: number): Uint8Array<ArrayBuffer> {
  const bytes = publicKey.startsWith(PREFIX) ? base64Bytes(publicKey.slice(PREFIX.length)) : undefined;
  if (bytes?.length !== KEY_BYTES) throw new TypeError(`publicKeys[${index}] is not a notification public key (whpk_ and the base64 of 32 bytes)`);
  return bytes;
}

/** Whether any `v1a,` entry of `signatures` (the header, space-separated) is an Ed25519 signature of `signed` by one of `keys`. */
export async function matchesEd25519(keys: readonly Uint8Array<ArrayBuffer>[], signatures: string, signed: Uint8Array<ArrayBuffer>): Promise<boolean> {
  const candidates = signatures
    .split(" ")
    .filter((entry) => entry.startsWith("v1a,"))
    .map((entry) => base64Bytes(entry.slice(4)))
    .filter((bytes): bytes is Uint8Array<ArrayBuffer> => bytes?.length === SIGNATURE_BYTES);
  if (candidates.length === 0) return false;
  for (const raw of keys) {
    const key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
    for (const candidate of candidates) if (await crypto.subtle.verify({ name: "Ed25519" }, key, candidate, signed)) return true;
  }
  return false;
}
