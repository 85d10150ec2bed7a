// The code samples of every operation (Redoc's `x-codeSamples`): a curl command and a program with
// the typed client (@tenant/access-api-client), made from the operation's method, path, required
// parameters' examples and request body example, so that they change with the contract.
// test/docs/code-samples.test.ts runs every one of them twice, as printed, against a seeded sandbox.
//
// What differs per deployment and per reader is read from environment variables (the contract's
// introduction lists them): BASE_URL, TOKEN (which the token's curl sample exports), CLIENT_ID,
// CLIENT_SECRET, WEBHOOK_SECRET, and one per id a path takes (USER_ID, AUTOMATION_ID...), wherever
// the id's example value appears. An Idempotency-Key is made anew at each run, so a sample runs twice.

const FORM = "application/x-www-form-urlencoded";
const JSON_MEDIA = "application/json";
/** The token request's fields that are the reader's own credential. */
const CREDENTIAL_FIELDS = { client_id: "CLIENT_ID", client_secret: "CLIENT_SECRET" };

/**
 * A value the sample does not write out: an environment variable, or a fresh idempotency key
 * (FRESH_KEY). It stands in the request as a marker that each language then writes its own way.
 */
const marker = (name) => `\uE000${name}\uE000`;
const MARKER = /\uE000([A-Z_]+)\uE000/g;
const hasMarker = (text) => text.includes("\uE000");
const FRESH_KEY = "FRESH_KEY";
/** A new Stripe event id at each run: Stripe's ids are `evt_` and letters and digits. */
const FRESH_STRIPE_ID = "FRESH_STRIPE_ID";
const SHELL_FRESH = { [FRESH_KEY]: "$(uuidgen)", [FRESH_STRIPE_ID]: "evt_$(uuidgen | tr -d -)" };
const TS_FRESH = { [FRESH_KEY]: "crypto.randomUUID()", [FRESH_STRIPE_ID]: '`evt_${crypto.randomUUID().replaceAll("-", "")}`' };
const inShell = (text) => text.replace(MARKER, (_, name) => SHELL_FRESH[name] ?? `$${name}`);
const tsExpression = (name) => TS_FRESH[name] ?? `process.env.${name}!`;
/** A marker as a whole string literal becomes the expression; one inside a template literal, its substitution. */
const inTypeScript = (text) =>
  text.replace(new RegExp(`"${MARKER.source}"`, "g"), (_, name) => tsExpression(name)).replace(MARKER, (_, name) => `\${${tsExpression(name)}}`);

/** The variable of a path parameter: its name, or for `id` the collection's singular (`/automations/{id}`: AUTOMATION_ID). */
const variableOf = (path, name) => (name === "id" ? `${/\/([\w-]+?)s?\/\{id\}/.exec(path)[1]}_id` : name).replaceAll("-", "_").toUpperCase();

/** Every example value of a path parameter of the contract, and the variable a sample reads instead. */
function idVariables(spec, deref) {
  const variables = new Map();
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const op of Object.values(item).filter((o) => o?.operationId)) {
      for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])].map(deref).filter((x) => x.in === "path")) {
        const example = p.example ?? deref(p.schema)?.example;
        const variable = variableOf(path, p.name);
        if (variables.has(example) && variables.get(example) !== variable) throw new Error(`code-samples: ${example} is the example of ${variables.get(example)} and ${variable}`);
        variables.set(example, variable);
      }
    }
  }
  return variables;
}

/** `value` with every example id, at any depth, replaced by its variable's marker. */
const withVariables = (value, variables) =>
  typeof value === "string" && variables.has(value)
    ? marker(variables.get(value))
    : Array.isArray(value)
      ? value.map((v) => withVariables(v, variables))
      : value && typeof value === "object"
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withVariables(v, variables)]))
        : value;

/** The first example of a media type: `example`, else the first of `examples`. */
const exampleOf = (media, deref) => media.example ?? deref(Object.values(media.examples ?? {})[0])?.value;

/** A shell word in single quotes, or in double quotes when it holds a marker, which the shell then expands. */
const shellWord = (text) => (hasMarker(text) ? `"${inShell(text.replace(/[\\"`$]/g, "\\$&"))}"` : `'${text.replaceAll("'", `'\\''`)}'`);

/** `value` as a TypeScript literal, continuing lines at `indent`; keys that are identifiers lose their quotes. */
const tsLiteral = (value, indent) =>
  JSON.stringify(value, null, 2)
    .replace(/^(\s*)"([A-Za-z_$][\w$]*)":/gm, "$1$2:")
    .replaceAll("\n", `\n${indent}`);

/** The webhook intake's security schemes, by the sender whose signing the sample does (SENDERS). */
const WEBHOOK_SCHEMES = { webhookHmac: "hmac", standardWebhooksSignature: "standardWebhooks", githubSignature: "github", stripeSignature: "stripe" };

/** What a sample needs of an operation: its request, as the contract's examples show it. */
function requestOf(spec, path, method, item, op) {
  const deref = (node) => (node?.$ref ? node.$ref.slice(2).split("/").reduce((n, p) => n?.[p], spec) : node);
  const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(deref).filter((p) => p.required === true);
  const valueOf = (p) => p.example ?? deref(p.schema)?.example;
  const byPlace = (place) => Object.fromEntries(params.filter((p) => p.in === place).map((p) => [p.name, valueOf(p)]));
  const body = deref(op.requestBody);
  const mediaType = body ? Object.keys(body.content)[0] : undefined;
  const schemes = (op.security ?? spec.security ?? []).flatMap((requirement) => Object.keys(requirement));
  const variables = idVariables(spec, deref);
  // A key is new at each run: the example's, sent again with another request, is 422 IDEMPOTENCY_KEY_REUSED.
  const headers = Object.fromEntries(Object.entries(byPlace("header")).map(([name, value]) => [name, name === "Idempotency-Key" ? marker(FRESH_KEY) : value]));
  const sender = schemes.map((scheme) => WEBHOOK_SCHEMES[scheme]).find(Boolean);
  const example = body ? withVariables(exampleOf(body.content[mediaType], deref), variables) : undefined;
  return {
    method,
    path,
    pathParams: withVariables(byPlace("path"), variables),
    query: withVariables(byPlace("query"), variables),
    // The webhook intake's headers are made by the signing, not copied from examples.
    headers: sender ? {} : headers,
    mediaType,
    // Stripe's event id is the body's: new at each run, as the other senders' header is.
    body: sender === "stripe" ? { ...example, id: marker(FRESH_STRIPE_ID) } : example,
    auth: sender ? "webhook" : schemes.length > 0 ? "bearer" : "none",
    sender,
  };
}

/** The path with its parameters' values, percent-encoded, or their markers. */
const filledPath = (request) =>
  request.path.replace(/\{([^}]+)\}/g, (_, name) => {
    const value = String(request.pathParams[name]);
    return hasMarker(value) ? value : encodeURIComponent(value);
  });
const queryString = (query) => (Object.keys(query).length === 0 ? "" : `?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`);

/** A JSON body for curl: quoted as it is, or, when it reads variables, a here-document the shell expands them in. */
function curlJsonBody(body) {
  const json = JSON.stringify(body, null, 2);
  if (!hasMarker(json)) return `-d ${shellWord(json.replaceAll("\n", "\n  "))}`;
  return `-d @- <<JSON\n${inShell(json.replace(/[\\`$]/g, "\\$&"))}\nJSON`;
}

/** The hex HMAC-SHA256 of stdin keyed by the listener's secret string (openssl prints `<algorithm>(stdin)= <hex>`). */
const HEX_HMAC = `openssl dgst -sha256 -hmac "$WEBHOOK_SECRET" | sed 's/.*= //'`;

/** A typed-client sample that signs the body itself (node:crypto) and posts the bytes it signed, with the typed header parameters and the signature's header. */
const signedClientSample = (request, signing) =>
  [
    `import { createHmac } from "node:crypto";`,
    CLIENT_IMPORT,
    ``,
    `const event = ${tsLiteral(request.body, "")};`,
    `// ${signing.comment}`,
    `const body = JSON.stringify(event);`,
    ...signing.clientSign,
    `const client = createApiClient({ baseUrl: process.env.BASE_URL! });`,
    ``,
    `const answer = unwrap(`,
    `  await client.POST(${JSON.stringify(request.path)}, {`,
    `    params: {`,
    ...(signing.clientHeaders ? [`      header: { ${signing.clientHeaders.map(([name, value]) => `${JSON.stringify(name)}: ${value}`).join(", ")} },`] : []),
    `      path: ${tsLiteral(request.pathParams, "      ")},`,
    `    },`,
    `    body: event,`,
    `    bodySerializer: () => body,`,
    `    headers: { ${JSON.stringify(signing.signatureHeader[0])}: ${signing.signatureHeader[1]} },`,
    `  }),`,
    `);`,
    PRINT,
  ].join("\n");

/**
 * How each sender signs, for the intake's samples: the curl lines after `body=` and the headers
 * they make, and the typed-client program. Each run signs with the time now and a new event id.
 */
const SENDERS = {
  hmac: {
    comment: "The listener's webhook secret signs the exact bytes sent, with the time and a new event id each.",
    shell: [
      `timestamp=$(date +%s)`,
      `event_id=$(openssl rand -hex 16 | sed -E 's/(.{8})(.{4}).(.{3}).(.{3})(.{12})/\\1-\\2-4\\3-8\\4-\\5/')`,
      `signature=$(printf '%s.%s.%s' "$timestamp" "$event_id" "$body" |`,
      `  openssl dgst -sha256 -hmac "$WEBHOOK_SECRET" -binary | openssl base64 -A | tr '+/' '-_' | tr -d '=')`,
    ],
    shellHeaders: ["Webhook-Timestamp: $timestamp", "Webhook-Event-Id: $event_id", "Webhook-Signature: $signature"],
    client: (request) =>
      [
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
      ].join("\n"),
  },
  standardWebhooks: {
    comment: "The listener's whsec_ secret signs id, time and exact body: its key is the bytes of the base64 after whsec_.",
    shell: [
      `timestamp=$(date +%s)`,
      `message_id=$(uuidgen)`,
      `key=$(printf %s "\${WEBHOOK_SECRET#whsec_}" | openssl base64 -d -A | od -An -tx1 | tr -d ' \\n')`,
      `signature=$(printf '%s.%s.%s' "$message_id" "$timestamp" "$body" |`,
      `  openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key" -binary | openssl base64 -A)`,
    ],
    shellHeaders: ["webhook-id: $message_id", "webhook-timestamp: $timestamp", "webhook-signature: v1,$signature"],
    clientSign: [
      `const id = crypto.randomUUID();`,
      `const timestamp = String(Math.floor(Date.now() / 1000));`,
      `const key = Buffer.from(process.env.WEBHOOK_SECRET!.slice("whsec_".length), "base64");`,
      `const signature = createHmac("sha256", key).update(\`\${id}.\${timestamp}.\${body}\`).digest("base64");`,
    ],
    clientHeaders: [["webhook-id", "id"], ["webhook-timestamp", "timestamp"]],
    signatureHeader: ["webhook-signature", "`v1,${signature}`"],
  },
  github: {
    comment: "The listener's secret signs the exact bytes sent; GitHub signs no time. A new delivery id each.",
    shell: [`delivery=$(uuidgen)`, `signature=$(printf %s "$body" | ${HEX_HMAC})`],
    shellHeaders: ["X-GitHub-Delivery: $delivery", "X-GitHub-Event: push", "X-Hub-Signature-256: sha256=$signature"],
    clientSign: [`const signature = createHmac("sha256", process.env.WEBHOOK_SECRET!).update(body).digest("hex");`],
    clientHeaders: [["X-GitHub-Delivery", "crypto.randomUUID()"], ["X-GitHub-Event", '"push"']],
    signatureHeader: ["X-Hub-Signature-256", "`sha256=${signature}`"],
  },
  stripe: {
    comment: "The listener's whsec_ secret, as a string, signs the time and the exact bytes sent; the event id is the body's.",
    shell: [`timestamp=$(date +%s)`, `signature=$(printf '%s.%s' "$timestamp" "$body" | ${HEX_HMAC})`],
    shellHeaders: ["Stripe-Signature: t=$timestamp,v1=$signature"],
    clientSign: [
      `const timestamp = Math.floor(Date.now() / 1000);`,
      `const signature = createHmac("sha256", process.env.WEBHOOK_SECRET!).update(\`\${timestamp}.\${body}\`).digest("hex");`,
    ],
    signatureHeader: ["Stripe-Signature", "`t=${timestamp},v1=${signature}`"],
  },
};

function curlSample(request) {
  const url = `"$BASE_URL${inShell(filledPath(request))}${inShell(queryString(request.query))}"`;
  if (request.auth === "webhook") {
    const signing = SENDERS[request.sender];
    return [
      `# ${signing.comment}`,
      `body=${shellWord(JSON.stringify(request.body))}`,
      ...signing.shell,
      `curl -X POST ${url} \\`,
      ...[`Content-Type: application/json`, ...signing.shellHeaders].map((header) => `  -H "${header}" \\`),
      `  --data-binary "$body"`,
    ].join("\n");
  }
  // The token request is the one that sends the credential: its sample keeps the token in TOKEN, which the others send.
  const tokenRequest = request.mediaType === FORM && Object.keys(request.body).some((name) => name in CREDENTIAL_FIELDS);
  const lines = [`${tokenRequest ? "export TOKEN=$(curl -sS" : "curl"} -X ${request.method.toUpperCase()} ${url}`];
  if (request.auth === "bearer") lines.push(`-H "Authorization: Bearer $TOKEN"`);
  for (const [name, value] of Object.entries(request.headers)) lines.push(`-H ${shellWord(`${name}: ${value}`)}`);
  if (request.mediaType === FORM) {
    for (const [name, value] of Object.entries(request.body)) {
      lines.push(name in CREDENTIAL_FIELDS ? `--data-urlencode "${name}=$${CREDENTIAL_FIELDS[name]}"` : `--data-urlencode ${shellWord(`${name}=${value}`)}`);
    }
  } else if (request.mediaType === JSON_MEDIA) {
    lines.push(`-H "Content-Type: application/json"`, curlJsonBody(request.body));
  }
  const command = lines.join(" \\\n  ");
  return tokenRequest ? `# Sets TOKEN for the other samples; get a new one when it expires (expires_in seconds).\n${command} | jq -r .access_token)` : command;
}

const CLIENT_IMPORT = `import { createApiClient, unwrap } from "@tenant/access-api-client";`;
const PRINT = `console.log(JSON.stringify(answer, null, 2));`;

function clientSample(request) {
  if (request.auth === "webhook") return request.sender === "hmac" ? SENDERS.hmac.client(request) : signedClientSample(request, SENDERS[request.sender]);
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

/** The `x-codeSamples` of an operation; the variables they read are listed once, in the contract's introduction. */
export function codeSamples(spec, path, method, item, op) {
  const request = requestOf(spec, path, method, item, op);
  return [
    { lang: "Shell", label: "curl", source: curlSample(request) },
    { lang: "TypeScript", label: "Typed client", source: inTypeScript(clientSample(request)) },
  ];
}
