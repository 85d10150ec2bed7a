#!/usr/bin/env bash
# Verifies one notification of a notify step (Standard Webhooks), with bash and openssl:
#
#   NOTIFICATION_SECRET=whsec_... WEBHOOK_ID=<webhook-id> WEBHOOK_TIMESTAMP=<webhook-timestamp> \
#     WEBHOOK_SIGNATURE=<webhook-signature> ./verify.sh < body.json
#
# Prints "verified" and exits 0, or "refused: <why>" and exits 1. For checking by hand: the key is on
# openssl's command line and the comparison is not constant-time, so a server uses another program.
set -euo pipefail
body=$(cat; printf x) && body=${body%x} # every byte of the body, final newlines included
now=$(date +%s)
if [[ ! $WEBHOOK_TIMESTAMP =~ ^[0-9]{1,15}$ ]] || ((now - WEBHOOK_TIMESTAMP > 300 || WEBHOOK_TIMESTAMP - now > 300)); then
  echo "refused: webhook-timestamp is not within 5 minutes of now"
  exit 1
fi
key=$(printf '%s' "${NOTIFICATION_SECRET#whsec_}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
expected=$(printf '%s.%s.%s' "$WEBHOOK_ID" "$WEBHOOK_TIMESTAMP" "$body" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key" -binary | base64)
for entry in $WEBHOOK_SIGNATURE; do # one "v1,<base64>" per secret; other versions never match
  if [[ $entry == "v1,$expected" ]]; then
    echo verified
    exit 0
  fi
done
echo "refused: no v1 signature matches"
exit 1
