#!/usr/bin/env -S npx tsx
// Signs and sends one event to a webhook listener, and prints what was sent and the answer.
// `--help` prints the options (USAGE below); docs/senders.md shows every kind of listener it signs for.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { JWK } from "jose";
import { sendWebhookEvent, standardWebhookSignature, type WebhookAuth } from "../src/client/webhook-sender.js";

const USAGE = `Usage: npx tsx scripts/send-webhook.ts --url <listener url> (--body <json> | --body-file <file>) <auth> [options]

Signs one event as the webhook intake checks it, sends it, and prints what was sent and the answer.

The listener's kind (--kind, or else what its URL ends with: /standard-webhooks, /github, /stripe;
else hmac, or jwt when a key file is given) says how the event is signed:
  --kind <kind>            hmac, jwt, standard-webhooks, github or stripe

Authentication (one of):
  --secret=<secret>        the listener's webhook secret, for hmac, standard-webhooks (whsec_...),
                           github and stripe (with "=": a secret may begin with "-")
  --jwk-file <file>        JWT signed by this private JWK; needs --kid and --base-url
  --pem-file <file>        JWT signed by this PKCS#8 private key; needs --kid and --base-url;
                           for standard-webhooks, the Ed25519 key that signs v1a
    --kid <key id>         the key's id in the listener's JWKS
    --alg <alg>            RS256, ES256 (default) or EdDSA
    --base-url <url>       the tenant base URL (the JWT's sub)

Options:
  --event-id <id>          the event id (default: a new one); a UUID v4 for hmac and jwt;
                           stripe takes the body's id and refuses this option
  --event-type <type>      X-GitHub-Event, required for github (push, ping...)
  --timestamp <seconds>    the signed time, Unix seconds (default: now; github signs none)
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
        kind: { type: "string" },
        body: { type: "string" },
        "body-file": { type: "string" },
        secret: { type: "string" },
        "jwk-file": { type: "string" },
        "pem-file": { type: "string" },
        kid: { type: "string" },
        alg: { type: "string", default: "ES256" },
        "base-url": { type: "string" },
        "event-id": { type: "string" },
        "event-type": { type: "string" },
        timestamp: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }).values;
  } catch (e) {
    // parseArgs explains unknown options and missing values in one sentence; the stack adds nothing.
    fail(`${(e as Error).message} (--help lists the options)`);
  }
}

/** A file the options name; one that cannot be read is a usage error. */
function readOption(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    fail(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

function jwkOption(path: string): JWK {
  try {
    return JSON.parse(readOption(path)) as JWK;
  } catch (e) {
    fail(`${path} is not a JWK: ${(e as Error).message}`);
  }
}

const values = parseOptions();
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

if (!values.url) fail("--url is required");
const body = values["body-file"] ? readOption(values["body-file"]) : (values.body ?? fail("--body or --body-file is required"));
const KINDS = ["hmac", "jwt", "standard-webhooks", "github", "stripe"] as const;
type Kind = (typeof KINDS)[number];
const keyFile = values["jwk-file"] ?? values["pem-file"];
// The senders' own kinds are received at URLs of their own (the trigger's url ends with the kind).
const urlKind = (["standard-webhooks", "github", "stripe"] as const).find((kind) => values.url!.replace(/\/+$/, "").endsWith(`/${kind}`));
const kind = (values.kind ?? urlKind ?? (keyFile ? "jwt" : "hmac")) as Kind;
if (!KINDS.includes(kind)) fail(`--kind must be one of ${KINDS.join(", ")}`);

const secret = (): string => values.secret ?? fail(`--secret=<secret> is required for ${kind}`);
function jwtAuth(): WebhookAuth {
  if (!keyFile) fail("jwt needs --jwk-file or --pem-file");
  if (!values.kid || !values["base-url"]) fail("JWT needs --kid and --base-url");
  const alg = values.alg as "RS256" | "ES256" | "EdDSA";
  if (!["RS256", "ES256", "EdDSA"].includes(alg)) fail("--alg must be RS256, ES256 or EdDSA");
  const privateKey = values["jwk-file"] ? jwkOption(values["jwk-file"]) : readOption(values["pem-file"]!);
  return { jwt: { privateKey, kid: values.kid, alg, baseUrl: values["base-url"] } };
}
const AUTH: Record<Kind, () => WebhookAuth> = {
  hmac: () => ({ hmac: { secret: values.secret ?? fail("--secret (HMAC) or --jwk-file/--pem-file (JWT) is required") } }),
  jwt: jwtAuth,
  "standard-webhooks": () => {
    const auth = values["pem-file"] ? { privateKey: readOption(values["pem-file"]) } : { secret: secret() };
    try {
      standardWebhookSignature(auth, "check", "0", ""); // a key of another type, or a secret without whsec_, is a usage error
    } catch (e) {
      fail((e as Error).message);
    }
    return { standardWebhooks: auth };
  },
  github: () => ({ github: { secret: secret(), event: values["event-type"] ?? fail("github needs --event-type (X-GitHub-Event: push, ping...)") } }),
  stripe: () => {
    if (values["event-id"]) fail("stripe takes the event id from the body's id: leave --event-id out");
    return { stripe: { secret: secret() } };
  },
};
const auth = AUTH[kind]();

const event = { url: values.url, body, auth, ...(values["event-id"] ? { eventId: values["event-id"] } : {}), ...(values.timestamp ? { timestamp: values.timestamp } : {}) };
const sent = await sendWebhookEvent(event).catch((e: Error) => {
  // No answer (refused connection, unknown host): one line, as any other failed send.
  process.stderr.write(`send-webhook: ${e.message}${e.cause instanceof Error ? ` (${e.cause.message})` : ""}\n`);
  process.exit(1);
});
const shown = { ...sent.request.headers };
if (shown.Authorization) shown.Authorization = `Bearer ${shown.Authorization.slice(7, 27)}...`;
process.stdout.write(`POST ${sent.request.url}\n`);
for (const [name, value] of Object.entries(shown)) process.stdout.write(`${name}: ${value}\n`);
process.stdout.write(`\n${sent.request.body}\n\n=> ${sent.status}\n${JSON.stringify(sent.response, null, 2)}\n`);
process.exit(sent.status >= 200 && sent.status < 300 ? 0 : 1);
