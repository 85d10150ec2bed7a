#!/usr/bin/env -S npx tsx
// Signs and sends one event to a webhook listener, and prints what was sent and the answer.
// `--help` prints the options (USAGE below); docs/senders.md shows both kinds of authentication.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { JWK } from "jose";
import { sendWebhookEvent, type WebhookAuth } from "../src/client/webhook-sender.js";

const USAGE = `Usage: npx tsx scripts/send-webhook.ts --url <listener url> (--body <json> | --body-file <file>) <auth> [options]

Signs one event as the webhook intake checks it, sends it, and prints what was sent and the answer.

Authentication (one of):
  --secret=<secret>        HMAC with the listener's webhook secret (with "=": a secret may begin with "-")
  --jwk-file <file>        JWT signed by this private JWK; needs --kid and --base-url
  --pem-file <file>        JWT signed by this PKCS#8 private key; needs --kid and --base-url
    --kid <key id>         the key's id in the listener's JWKS
    --alg <alg>            RS256, ES256 (default) or EdDSA
    --base-url <url>       the tenant base URL (the JWT's sub)

Options:
  --event-id <uuid v4>     Webhook-Event-Id (default: a new one)
  --timestamp <seconds>    Webhook-Timestamp, Unix seconds (default: now)
  --help                   this text

Exit code: 0 on a 2xx answer, 1 on any other answer, 2 on a usage error.
`;

function fail(message: string): never {
  process.stderr.write(`send-webhook: ${message}\n`);
  process.exit(2);
}

function parseOptions() {
  try {
    return parseArgs({
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
        help: { type: "boolean", short: "h" },
      },
    }).values;
  } catch (e) {
    // parseArgs explains unknown options and missing values in one sentence; the stack adds nothing.
    fail(`${(e as Error).message} (--help lists the options)`);
  }
}

const values = parseOptions();
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
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
