#!/usr/bin/env node
// Signs one event for a webhook listener with HMAC and sends it: Node 18 or later, node:crypto and
// fetch only.
//
//   LISTENER_URL=<the listener's url> WEBHOOK_SECRET=<its webhook secret> node sign-and-send.mjs < event.json
//   WEBHOOK_SECRET=<secret> node sign-and-send.mjs --sign-only <timestamp> <event id> < event.json
//
// The body is read from standard input and signed and sent byte for byte. The signature is
// base64url (no padding) of HMAC-SHA256, keyed by the secret string's UTF-8 bytes, over
// "{timestamp}.{event id}.{body}"; the event is sent with the current Unix time and a fresh UUID v4.
// Prints the request's headers, "=> <status>" and the answer; exits 0 on a 2xx answer, 1 on another,
// 2 on a usage error. --sign-only prints the signature for the given timestamp and event id and
// sends nothing: compare it with the published test vectors (test/fixtures/webhook-hmac.json).
import { createHmac, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";

function sign(secret, timestamp, eventId, body) {
  return createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${eventId}.`).update(body).digest("base64url");
}

/** Sends `body` signed now under a fresh event id; answers whether the listener answered 2xx. */
async function send(url, secret, body) {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const eventId = randomUUID();
  const signed = { "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId, "Webhook-Signature": sign(secret, timestamp, eventId, body) };
  console.log(`POST ${url}`);
  for (const [name, value] of Object.entries(signed)) console.log(`${name}: ${value}`);
  const answer = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...signed }, body });
  console.log(`=> ${answer.status}`);
  console.log(await answer.text());
  return answer.ok;
}

function usage() {
  console.error("LISTENER_URL=<the listener's url> WEBHOOK_SECRET=<its webhook secret> node sign-and-send.mjs < event.json");
  console.error("WEBHOOK_SECRET=<secret> node sign-and-send.mjs --sign-only <timestamp> <event id> < event.json");
  process.exit(2);
}

const { LISTENER_URL: url, WEBHOOK_SECRET: secret } = process.env;
const args = process.argv.slice(2);
if (!secret) usage();
const body = readFileSync(0); // standard input, as bytes
if (args[0] === "--sign-only") {
  if (args.length !== 3) usage();
  console.log(sign(secret, args[1], args[2], body));
} else {
  if (args.length !== 0 || !url) usage();
  process.exitCode = (await send(url, secret, body)) ? 0 : 1;
}
