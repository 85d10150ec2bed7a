// What the sandbox prints: everything a partner needs to call it, with ready-to-paste commands.
import type { SecretListener, Seeded } from "./seed.js";

export interface SandboxInfo extends Seeded {
  baseUrl: string;
  dir: string;
  database: string;
  jwtKey: { privateJwkFile: string; kid: string; alg: string };
}

/** Reads the access token from a token answer on stdin (Node, so that no jq is needed). */
const READ_TOKEN = `node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).access_token'`;

/** A new event id each time a recipe runs (Node: every sandbox reader has it). */
const NEW_UUID = `$(node -e 'console.log(crypto.randomUUID())')`;

/** The hex HMAC-SHA256 of stdin keyed by the secret's UTF-8 bytes (openssl prints `<algorithm>(stdin)= <hex>`). */
const hexHmac = (secret: string) => `openssl dgst -sha256 -hmac '${secret}' | sed 's/.*= //'`;

/** A curl that posts $BODY to `url` with `headers` (shell words, expanded). */
const curlPost = (url: string, headers: string[]) =>
  [`curl -sS -X POST '${url}' -H 'Content-Type: application/json' \\`, `  ${headers.map((h) => `-H "${h}"`).join(" ")} --data-binary "$BODY"`].join("\n");

/** The curl recipe for a signed HMAC event (the reference's guide openapi/guides/webhooks.md), filled in. */
const curlHmac = (info: SandboxInfo, event: string) =>
  [
    `BODY='${event}'; TS=$(date +%s); ID=${NEW_UUID}`,
    `SIG=$(printf '%s.%s.%s' "$TS" "$ID" "$BODY" | openssl dgst -sha256 -hmac '${info.hmac.webhookSecret}' -binary | openssl base64 -A | tr '+/' '-_' | tr -d '=')`,
    curlPost(info.hmac.listenerUrl, ["Webhook-Timestamp: $TS", "Webhook-Event-Id: $ID", "Webhook-Signature: $SIG"]),
  ].join("\n");

/** The curl recipes for the listeners of senders with a scheme of their own, signed as the guide signs for each, filled in. */
function senderRecipes(info: SandboxInfo) {
  const { standardWebhooks, github, stripe } = info;
  return {
    // The key is the bytes the base64 after whsec_ stands for, given to openssl as hex.
    standardWebhooksCurl: [
      `BODY='{"type":"invoice.paid","data":{"invoice":"in_1001"}}'; TS=$(date +%s); ID=msg_${NEW_UUID}`,
      `KEY=$(printf %s '${standardWebhooks.webhookSecret.slice("whsec_".length)}' | openssl base64 -d -A | od -An -tx1 | tr -d ' \\n')`,
      `SIG=$(printf '%s.%s.%s' "$ID" "$TS" "$BODY" | openssl dgst -sha256 -mac HMAC -macopt hexkey:$KEY -binary | openssl base64 -A)`,
      curlPost(standardWebhooks.listenerUrl, ["webhook-id: $ID", "webhook-timestamp: $TS", "webhook-signature: v1,$SIG"]),
    ].join("\n"),
    githubCurl: [
      `BODY='{"ref":"refs/heads/main","repository":{"full_name":"example/billing"}}'; ID=${NEW_UUID}`,
      `SIG=$(printf %s "$BODY" | ${hexHmac(github.webhookSecret)})`,
      curlPost(github.listenerUrl, ["X-GitHub-Delivery: $ID", "X-GitHub-Event: push", "X-Hub-Signature-256: sha256=$SIG"]),
    ].join("\n"),
    // Stripe's event id is the body's id.
    stripeCurl: [
      `ID=evt_${NEW_UUID}; BODY='{"id":"'$ID'","object":"event","type":"invoice.paid"}'; TS=$(date +%s)`,
      `SIG=$(printf '%s.%s' "$TS" "$BODY" | ${hexHmac(stripe.webhookSecret)})`,
      curlPost(stripe.listenerUrl, ["Stripe-Signature: t=$TS,v1=$SIG"]),
    ].join("\n"),
  };
}

/** The user the printed examples act for, and the row their webhook event suspends: Sam's GitHub limit, not the Salesforce row the printed spend uses. */
const exampleSubjects = (info: SandboxInfo) => {
  const [ada, sam] = info.users.filter((u) => u.role === "ROLE_USER");
  return { ada: ada!, suspended: { userId: sam!.userId, appId: "app-github" } };
};

/**
 * The commands the text shows, in its order (each line as printed, without the indent). Followed
 * in that order, each does what the text says: the webhook events suspend a row the spend does not use.
 */
export function recipes(info: SandboxInfo) {
  const { ada, suspended } = exampleSubjects(info);
  const event = JSON.stringify({ event: "card.lost", ...suspended });
  const admin = info.users[0]!;
  const fundAdmin = info.users.find((u) => u.role === "ROLE_FUND_ADMIN")!;
  return {
    token: [
      `ACCESS_TOKEN=$(curl -s -X POST ${info.baseUrl}/auth/v1/token -d grant_type=client_credentials -d client_id=${admin.clientId} -d 'client_secret=${admin.clientSecret}' | ${READ_TOKEN})`,
      `curl -s ${info.baseUrl}/api/v1/funds/policy -H "Authorization: Bearer $ACCESS_TOKEN"`,
    ].join("\n"),
    spend: [
      `CLIENT_ID=${fundAdmin.clientId} CLIENT_SECRET='${fundAdmin.clientSecret}' BASE_URL=${info.baseUrl} \\`,
      `  npx tsx scripts/spend.ts authorize --user ${ada.userId} --app app-salesforce --amount 12.50`,
    ].join("\n"),
    hmacEvent: `npx tsx scripts/send-webhook.ts --url ${info.hmac.listenerUrl} --secret=${info.hmac.webhookSecret} --body '${event}'`,
    hmacCurl: curlHmac(info, event),
    jwtEvent: [
      `npx tsx scripts/send-webhook.ts --url ${info.jwt.listenerUrl} --jwk-file ${info.jwtKey.privateJwkFile} --kid ${info.jwtKey.kid} --alg ${info.jwtKey.alg} \\`,
      `  --base-url ${info.baseUrl} --body '${event}'`,
    ].join("\n"),
    ...senderRecipes(info),
  };
}

/** `lines` indented by `spaces`. */
const indented = (lines: string, spaces: number) => lines.replace(/^/gm, " ".repeat(spaces));

/** A listener of a sender's own scheme: its URL, its secret and a signed request with curl. */
const senderSection = (name: string, listener: SecretListener, curl: string) => [
  `${name} listener (automation ${listener.automationId}): ${listener.listenerUrl}`,
  `  webhook secret: ${listener.webhookSecret}`,
  indented(curl, 2),
];

export function report(info: SandboxInfo): string {
  const shown = recipes(info);
  const { suspended } = exampleSubjects(info);
  const nameOf = (userId: string) => info.users.find((u) => u.userId === userId)!.displayName;
  const lines = [
    `Sandbox: the real server on a fresh SQLite database (${info.database}); it resets at every start.`,
    `  base URL:  ${info.baseUrl}    docs: ${info.baseUrl}/docs    console: ${info.baseUrl}/console (after npm run build)`,
    `  as JSON:   ${info.dir}/sandbox.json`,
    ``,
    `Users and their client credentials:`,
    ...info.users.map(
      (u) =>
        `  ${u.role.padEnd(17)} ${u.displayName.padEnd(24)} user ${u.userId}  client_id ${u.clientId}  client_secret=${u.clientSecret}` +
        (u.appIds.length > 0 ? `  (acts for ${u.appIds.join(", ")})` : ""),
    ),
    `  and ${info.teamUserIds.length} colleagues with no credential: GET ${info.baseUrl}/api/v1/users?page_size=10 answers a nextPageToken for the next page.`,
    `  a token, and a call with it:`,
    indented(shown.token, 4),
    ``,
    `Fund limits (${info.currencyCode}): the fund policy's default is 100 a month; app caps: app-salesforce 1000 a month, app-zoom blocked.`,
    `  Spend windows (days, weeks from Monday, months, quarters, years) follow the calendar of the policy's time zone: ${info.timeZone} (FundPolicy.timeZone).`,
    ...info.limits.map((l) => `  ${nameOf(l.userId)} / ${l.appId}: ${l.shows}`),
    ``,
    `Spend authorizations (newest last), made by the fund admin:`,
    ...info.authorizations.map((a) => `  ${a.id}  ${nameOf(a.userId)} / ${a.appId}  ${a.state.replace("SPEND_AUTHORIZATION_STATE_", "").toLowerCase().padEnd(8)}  ${a.shows}`),
    `  from the shell (see Spend flow in docs/spends.md), e.g. as the fund admin:`,
    indented(shown.spend, 4),
    ``,
    `The listeners' automations suspend the limit named by a card.lost event; the events below suspend ${nameOf(suspended.userId)} / ${suspended.appId}.`,
    `HMAC listener (automation ${info.hmac.automationId}): ${info.hmac.listenerUrl}`,
    `  webhook secret: ${info.hmac.webhookSecret}`,
    indented(shown.hmacEvent, 2),
    `  or with curl:`,
    indented(shown.hmacCurl, 4),
    ``,
    `JWT listener (automation ${info.jwt.automationId}): ${info.jwt.listenerUrl}`,
    `  JWKS served by the sandbox at ${info.jwt.jwksUrl} (an http loopback URL: the server runs with JWKS_ALLOW_INSECURE=1, for the sandbox only)`,
    `  private key: ${info.jwtKey.privateJwkFile} (kid ${info.jwtKey.kid}, ${info.jwtKey.alg})`,
    indented(shown.jwtEvent, 2),
    ``,
    `Listeners of senders with their own signing schemes (see Sending webhooks in the docs); their automations note ctx.webhook, the delivery's event id and type.`,
    ...senderSection("Standard Webhooks", info.standardWebhooks, shown.standardWebhooksCurl),
    ...senderSection("GitHub", info.github, shown.githubCurl),
    ...senderSection("Stripe", info.stripe, shown.stripeCurl),
    ``,
    `Executions of the ${info.executionIds.length} seeded events: GET ${info.baseUrl}/api/v1/automation_executions (super admin), and each automation's delivery log.`,
    `Ctrl-C stops the sandbox.`,
  ];
  return lines.join("\n") + "\n";
}
