#!/usr/bin/env node
// Verifies one notification of a notify step (Standard Webhooks): Node 18 or later, node:crypto only.
//
//   NOTIFICATION_SECRET=whsec_... WEBHOOK_ID=<webhook-id> WEBHOOK_TIMESTAMP=<webhook-timestamp> \
//     WEBHOOK_SIGNATURE=<webhook-signature> node verify.mjs < body.json
//
// Prints "verified" and exits 0, or "refused: <why>" and exits 1. In a server, call `verify` with
// the request's headers and its raw body, before parsing it.
import { createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";

const TOLERANCE_SECONDS = 300;

/** Throws when the notification is not one of `secret`'s, sent within TOLERANCE_SECONDS of now. */
function verify(secret, id, timestamp, signatures, body) {
  const age = Math.floor(Date.now() / 1000) - Number(timestamp);
  if (!/^[0-9]{1,15}$/.test(timestamp) || Math.abs(age) > TOLERANCE_SECONDS) throw new Error("webhook-timestamp is not within 5 minutes of now");
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
  // One "v1,<base64>" per secret the sender signs with; entries of other versions are ignored.
  const matches = signatures.split(" ").some((entry) => {
    if (!entry.startsWith("v1,")) return false;
    const given = Buffer.from(entry.slice(3), "base64");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new Error("no v1 signature matches");
}

try {
  const { NOTIFICATION_SECRET, WEBHOOK_ID, WEBHOOK_TIMESTAMP, WEBHOOK_SIGNATURE } = process.env;
  verify(NOTIFICATION_SECRET ?? "", WEBHOOK_ID ?? "", WEBHOOK_TIMESTAMP ?? "", WEBHOOK_SIGNATURE ?? "", readFileSync(0));
  console.log("verified");
} catch (e) {
  console.log(`refused: ${e.message}`);
  process.exitCode = 1;
}
