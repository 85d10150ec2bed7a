// The ready-to-paste requests shown with a listener: the repository's sender script, and for HMAC a
// plain curl that signs as the contract says (HMAC-SHA256 over `{timestamp}.{event_id}.{body}`
// keyed by the secret's UTF-8 bytes, base64url without padding).

/** Single-quotes a value for a POSIX shell. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The example event, about `userId`: a user of the tenant, so that steps run on it act on someone who exists. */
export function exampleBody(userId: string): string {
  return JSON.stringify({ event: "card.lost", userId, appId: "app-salesforce" });
}

export interface ExampleTarget {
  url: string;
  method: "hmac" | "jwt";
  /** The HMAC secret when it is shown; otherwise the command names a variable to fill in. */
  secret?: string;
  /** The tenant base URL (`sub` of webhook JWTs). */
  baseUrl: string;
  /** The event sent (`exampleBody`). */
  body: string;
}

export function senderCommand(t: ExampleTarget): string {
  const body = shellQuote(t.body);
  if (t.method === "hmac") {
    return `npx tsx scripts/send-webhook.ts --url ${shellQuote(t.url)} --secret=${t.secret ? shellQuote(t.secret) : '"$WEBHOOK_SECRET"'} \\\n  --body ${body}`;
  }
  return `npx tsx scripts/send-webhook.ts --url ${shellQuote(t.url)} --jwk-file private.jwk.json --kid k1 --alg ES256 \\\n  --base-url ${shellQuote(t.baseUrl)} --body ${body}`;
}

export function curlCommand(t: ExampleTarget): string {
  return [
    `URL=${shellQuote(t.url)}`,
    `SECRET=${t.secret ? shellQuote(t.secret) : '"$WEBHOOK_SECRET"'}`,
    `BODY=${shellQuote(t.body)}`,
    `TS=$(date +%s)`,
    `ID=$(node -e 'console.log(crypto.randomUUID())')`,
    `SIG=$(printf '%s.%s.%s' "$TS" "$ID" "$BODY" | openssl dgst -sha256 -hmac "$SECRET" -binary | openssl base64 -A | tr '+/' '-_' | tr -d '=')`,
    `curl -sS -X POST "$URL" -H 'Content-Type: application/json' -H "Webhook-Timestamp: $TS" \\`,
    `  -H "Webhook-Event-Id: $ID" -H "Webhook-Signature: $SIG" --data-binary "$BODY"`,
  ].join("\n");
}
