#!/usr/bin/env -S npx tsx
// Signs and sends one event to a webhook listener, and prints what was sent and the answer.
//
//   npx tsx scripts/send-webhook.ts --url <listener url> --secret=<webhook secret> --body '{"event":"card.lost"}'
//   npx tsx scripts/send-webhook.ts --url <listener url> --jwk-file key.jwk.json --kid k1 --alg ES256 \
//       --base-url https://tenant.example.com --body-file event.json
//
// Options: --event-id <uuid v4> (default: new), --timestamp <unix seconds> (default: now),
// --pem-file (PKCS#8 private key instead of --jwk-file). Exit code 0 on a 2xx answer, 1 otherwise.
// The secret goes with `=`: base64url, it may begin with `-`, which a separate argument would not allow.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { JWK } from "jose";
import { sendWebhookEvent, type WebhookAuth } from "../src/client/webhook-sender.js";

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    body: { type: "string" },
    "body-file": { type: "string" },
    secret: { type: "string" },
    "jwk-file": { type: "string" },
    "pem-file": { type: "string" },
    kid: { type: "string" },
    alg: { type: "string", default: "ES256" },
    "base-url": { type: "string" },
    "event-id": { type: "string" },
    timestamp: { type: "string" },
  },
});

function fail(message: string): never {
  process.stderr.write(`send-webhook: ${message}\n`);
  process.exit(2);
}

if (!values.url) fail("--url is required");
const body = values["body-file"] ? readFileSync(values["body-file"], "utf8") : (values.body ?? fail("--body or --body-file is required"));
let auth: WebhookAuth;
if (values.secret) {
  auth = { hmac: { secret: values.secret } };
} else if (values["jwk-file"] || values["pem-file"]) {
  if (!values.kid || !values["base-url"]) fail("JWT needs --kid and --base-url");
  const alg = values.alg as "RS256" | "ES256" | "EdDSA";
  if (!["RS256", "ES256", "EdDSA"].includes(alg)) fail("--alg must be RS256, ES256 or EdDSA");
  const privateKey = values["jwk-file"] ? (JSON.parse(readFileSync(values["jwk-file"], "utf8")) as JWK) : readFileSync(values["pem-file"]!, "utf8");
  auth = { jwt: { privateKey, kid: values.kid, alg, baseUrl: values["base-url"] } };
} else {
  fail("--secret (HMAC) or --jwk-file/--pem-file (JWT) is required");
}

const sent = await sendWebhookEvent({ url: values.url, body, auth, ...(values["event-id"] ? { eventId: values["event-id"] } : {}), ...(values.timestamp ? { timestamp: values.timestamp } : {}) });
const shown = { ...sent.request.headers };
if (shown.Authorization) shown.Authorization = `Bearer ${shown.Authorization.slice(7, 27)}...`;
process.stdout.write(`POST ${sent.request.url}\n`);
for (const [name, value] of Object.entries(shown)) process.stdout.write(`${name}: ${value}\n`);
process.stdout.write(`\n${sent.request.body}\n\n=> ${sent.status}\n${JSON.stringify(sent.response, null, 2)}\n`);
process.exit(sent.status >= 200 && sent.status < 300 ? 0 : 1);
