// The shared test vectors, as the tests read them: the repository carries a copy of each in
// test/fixtures/, so that the tests run in a clone of their own. Where the shared folder is beside
// the repository (../shared/vectors/), test/tooling/fixtures.test.ts holds every copy equal to it.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const FIXTURES = new URL("../fixtures/", import.meta.url);
/** The shared folder of vectors beside the repository, when it is there. */
export const SHARED_VECTORS = fileURLToPath(new URL("../../../shared/vectors/", import.meta.url));

/** The parsed copy, in test/fixtures/, of the shared vectors file `name`. */
export function vectors<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), "utf8")) as T;
}

/** The shared vectors files by name, parsed; empty when the shared folder is not beside the repository. */
export function sharedVectors(): Map<string, unknown> {
  if (!existsSync(SHARED_VECTORS)) return new Map();
  const names = readdirSync(SHARED_VECTORS).filter((name) => name.endsWith(".json"));
  return new Map(names.map((name) => [name, JSON.parse(readFileSync(SHARED_VECTORS + name, "utf8")) as unknown]));
}

/** One case of webhook-hmac.json: an event's signature and body hash (`htb_s256`) for a secret. */
export interface HmacVector {
  secret: string;
  timestamp: string;
  eventId: string;
  body: string;
  signature: string;
  htb_s256: string;
}
