// The code samples of every operation (Redoc's `x-codeSamples`): a curl command and a program with
// the typed client (@tenant/access-api-client), made from the operation's method, path, required
// parameters' examples and request body example, so that they change with the contract.
// test/docs/code-samples.test.ts runs every one of them against a seeded sandbox.
//
// What differs per deployment and per reader is left as environment variables the samples read:
// BASE_URL, TOKEN (an access token, for curl), CLIENT_ID and CLIENT_SECRET (the reader's
// credential) and WEBHOOK_SECRET (a listener's secret, for the webhook intake, which is signed
// instead of carrying a token).

const FORM = "application/x-www-form-urlencoded";
const JSON_MEDIA = "application/json";
/** The token request's fields that are the reader's own credential. */
const CREDENTIAL_FIELDS = { client_id: "CLIENT_ID", client_secret: "CLIENT_SECRET" };

/** The first example of a media type: `example`, else the first of `examples`. */
const exampleOf = (media, deref) => media.example ?? deref(Object.values(media.examples ?? {})[0])?.value;

/** A shell word in single quotes. */
const shellQuoted = (text) => `'${text.replaceAll("'", `'\\''`)}'`;

/** `value` as a TypeScript literal, continuing lines at `indent`; keys that are identifiers lose their quotes. */
const tsLiteral = (value, indent) =>
  JSON.stringify(value, null, 2)
    .replace(/^(\s*)"([A-Za-z_$][\w$]*)":/gm, "$1$2:")
    .replaceAll("\n", `\n${indent}`);

/** What a sample needs of an operation: its request, as the contract's examples show it. */
function requestOf(spec, path, method, item, op) {
  const deref = (node) => (node?.$ref ? node.$ref.slice(2).split("/").reduce((n, p) => n?.[p], spec) : node);
  const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(deref).filter((p) => p.required === true);
  const valueOf = (p) => p.example ?? deref(p.schema)?.example;
  const byPlace = (place) => Object.fromEntries(params.filter((p) => p.in === place).map((p) => [p.name, valueOf(p)]));
  const body = deref(op.requestBody);
  const mediaType = body ? Object.keys(body.content)[0] : undefined;
  const schemes = (op.security ?? spec.security ?? []).flatMap((requirement) => Object.keys(requirement));
  return {
    method,
    path,
    pathParams: byPlace("path"),
    query: byPlace("query"),
    // The webhook intake's headers are made by the signing, not copied from examples.
    headers: schemes.includes("webhookHmac") ? {} : byPlace("header"),
    mediaType,
    body: body ? exampleOf(body.content[mediaType], deref) : undefined,
    auth: schemes.includes("webhookHmac") ? "webhook" : schemes.length > 0 ? "bearer" : "none",
  };
}

const filledPath = (request) => request.path.replace(/\{([^}]+)\}/g, (_, name) => encodeURIComponent(String(request.pathParams[name])));
const queryString = (query) => (Object.keys(query).length === 0 ? "" : `?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`);

function curlSample(request) {
  const url = `"$BASE_URL${filledPath(request)}${queryString(request.query)}"`;
  if (request.auth === "webhook") {
    return [
      `# The listener's webhook secret signs the exact bytes sent, with the time and a new event id each.`,
      `body=${shellQuoted(JSON.stringify(request.body))}`,
      `timestamp=$(date +%s)`,
      `event_id=$(openssl rand -hex 16 | sed -E 's/(.{8})(.{4}).(.{3}).(.{3})(.{12})/\\1-\\2-4\\3-8\\4-\\5/')`,
      `signature=$(printf '%s.%s.%s' "$timestamp" "$event_id" "$body" |`,
      `  openssl dgst -sha256 -hmac "$WEBHOOK_SECRET" -binary | openssl base64 -A | tr '+/' '-_' | tr -d '=')`,
      `curl -X POST ${url} \\`,
      `  -H "Content-Type: application/json" \\`,
      `  -H "Webhook-Timestamp: $timestamp" \\`,
      `  -H "Webhook-Event-Id: $event_id" \\`,
      `  -H "Webhook-Signature: $signature" \\`,
      `  --data-binary "$body"`,
    ].join("\n");
  }
  const lines = [`curl -X ${request.method.toUpperCase()} ${url}`];
  if (request.auth === "bearer") lines.push(`-H "Authorization: Bearer $TOKEN"`);
  for (const [name, value] of Object.entries(request.headers)) lines.push(`-H ${shellQuoted(`${name}: ${value}`)}`);
  if (request.mediaType === FORM) {
    for (const [name, value] of Object.entries(request.body)) {
      lines.push(name in CREDENTIAL_FIELDS ? `--data-urlencode "${name}=$${CREDENTIAL_FIELDS[name]}"` : `--data-urlencode ${shellQuoted(`${name}=${value}`)}`);
    }
  } else if (request.mediaType === JSON_MEDIA) {
    lines.push(`-H "Content-Type: application/json"`, `-d ${shellQuoted(JSON.stringify(request.body, null, 2).replaceAll("\n", "\n  "))}`);
  }
  return lines.join(" \\\n  ");
}

const CLIENT_IMPORT = `import { createApiClient, unwrap } from "@tenant/access-api-client";`;
const PRINT = `console.log(JSON.stringify(answer, null, 2));`;

function clientSample(request) {
  if (request.auth === "webhook") {
    return [
      `import { sendWebhookEvent } from "@tenant/access-api-client/webhook-sender";`,
      ``,
      `// Signs the exact bytes sent with the listener's webhook secret, with the time and a new event id.`,
      `const sent = await sendWebhookEvent({`,
      `  url: \`\${process.env.BASE_URL}${filledPath(request)}\`,`,
      `  body: JSON.stringify(${tsLiteral(request.body, "  ")}),`,
      `  auth: { hmac: { secret: process.env.WEBHOOK_SECRET! } },`,
      `});`,
      `if (sent.status !== 200) throw new Error(\`the intake answered \${sent.status}: \${JSON.stringify(sent.response)}\`);`,
      `const answer = sent.response;`,
      PRINT,
    ].join("\n");
  }
  const init = [];
  const params = Object.entries({ header: request.headers, path: request.pathParams, query: request.query }).filter(([, values]) => Object.keys(values).length > 0);
  if (params.length > 0) init.push(`params: ${tsLiteral(Object.fromEntries(params), "    ")},`);
  if (request.mediaType === FORM) {
    const fields = Object.entries(request.body).map(([name, value]) => `${name}: ${name in CREDENTIAL_FIELDS ? `process.env.${CREDENTIAL_FIELDS[name]}!` : JSON.stringify(value)}`);
    init.push(`body: { ${fields.join(", ")} },`, `bodySerializer: (body) => new URLSearchParams(body).toString(),`, `headers: { "Content-Type": "${FORM}" },`);
  } else if (request.mediaType === JSON_MEDIA) {
    init.push(`body: ${tsLiteral(request.body, "    ")},`);
  }
  const call = `client.${request.method.toUpperCase()}(${JSON.stringify(request.path)}${init.length > 0 ? `, {\n    ${init.join("\n    ")}\n  }` : ""})`;
  const client =
    request.auth === "bearer"
      ? [
          `// Gets an access token with the credential, and a new one before it expires.`,
          `const client = createApiClient({`,
          `  baseUrl: process.env.BASE_URL!,`,
          `  credentials: { clientId: process.env.CLIENT_ID!, clientSecret: process.env.CLIENT_SECRET! },`,
          `});`,
        ]
      : [`// createApiClient({ baseUrl, credentials }) makes this request itself, and again before the token expires.`, `const client = createApiClient({ baseUrl: process.env.BASE_URL! });`];
  return [CLIENT_IMPORT, ``, ...client, ``, `const answer = unwrap(\n  await ${call},\n);`, PRINT].join("\n");
}

/** The `x-codeSamples` of an operation. */
export function codeSamples(spec, path, method, item, op) {
  const request = requestOf(spec, path, method, item, op);
  return [
    { lang: "Shell", label: "curl", source: curlSample(request) },
    { lang: "TypeScript", label: "Typed client", source: clientSample(request) },
  ];
}
