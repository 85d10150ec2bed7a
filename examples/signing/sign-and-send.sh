#!/usr/bin/env bash
# Signs one event for a webhook listener with HMAC and sends it: openssl and curl only.
#
#   LISTENER_URL=<the listener's url> WEBHOOK_SECRET=<its webhook secret> ./sign-and-send.sh < event.json
#   WEBHOOK_SECRET=<secret> ./sign-and-send.sh --sign-only <timestamp> <event id> < event.json
#
# The body is read from standard input and signed and sent byte for byte. The signature is
# base64url (no padding) of HMAC-SHA256, keyed by the secret string's UTF-8 bytes, over
# "{timestamp}.{event id}.{body}"; the event is sent with the current Unix time and a fresh UUID v4.
# Prints the request's headers, "=> <status>" and the answer; exits 0 on a 2xx answer, 1 on another,
# 2 on a usage error. --sign-only prints the signature for the given timestamp and event id and
# sends nothing: compare it with the published test vectors (test/fixtures/webhook-hmac.json).
# openssl takes the secret on its command line, where other users of this machine could read it in
# the process list: run it where they cannot.
set -euo pipefail

usage() { # the two lines of usage at the top of this file
  sed -n 's/^#   //p' "$0" >&2
  exit 2
}

sign() { # timestamp, event id, file holding the body
  { printf '%s.%s.' "$1" "$2"; cat "$3"; } |
    openssl dgst -sha256 -hmac "$WEBHOOK_SECRET" -binary | openssl base64 -A | tr '+/' '-_' | tr -d '='
}

[ -n "${WEBHOOK_SECRET:-}" ] || usage
body=$(mktemp)
answer=$(mktemp)
trap 'rm -f "$body" "$answer"' EXIT
cat >"$body"

if [ "${1:-}" = --sign-only ]; then
  [ "$#" -eq 3 ] || usage
  sign "$2" "$3" "$body"
  echo
  exit 0
fi
[ "$#" -eq 0 ] && [ -n "${LISTENER_URL:-}" ] || usage

timestamp=$(date +%s)
# A UUID v4: 122 random bits, the version nibble 4 and the variant bits 10.
hex=$(openssl rand -hex 16)
event_id="${hex:0:8}-${hex:8:4}-4${hex:13:3}-$(printf '%x' $((0x8 | (0x${hex:16:1} & 0x3))))${hex:17:3}-${hex:20:12}"
signature=$(sign "$timestamp" "$event_id" "$body")

echo "POST $LISTENER_URL"
echo "Webhook-Timestamp: $timestamp"
echo "Webhook-Event-Id: $event_id"
echo "Webhook-Signature: $signature"
status=$(curl -sS -o "$answer" -w '%{http_code}' -X POST "$LISTENER_URL" \
  -H 'Content-Type: application/json' -H "Webhook-Timestamp: $timestamp" \
  -H "Webhook-Event-Id: $event_id" -H "Webhook-Signature: $signature" --data-binary @"$body")
echo "=> $status"
cat "$answer"
echo
[ "$status" -ge 200 ] && [ "$status" -lt 300 ] || exit 1
