#!/usr/bin/env -S npx tsx
// Spends from the shell, for partners trying the flow: authorizes (or simulates), captures, releases,
// reverses, gets and lists spend authorizations with client credentials, and prints the JSON answer.
// `--help` prints the options (USAGE below); docs/spends.md's "Spend flow" shows a session.
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { createApiClient, TokenError, type ApiClient, type components } from "../src/client/index.js";

const USAGE = `Usage: npx tsx scripts/spend.ts <command> [<authorization id>] [options]

Commands:
  authorize --user <user id> --app <app id> --amount <amount> [--hold-seconds <n>] [--capture] [--metadata key=value]...
  simulate --user <user id> --app <app id> --amount <amount> [--hold-seconds <n>] [--capture] [--metadata key=value]...
                                                    the decision authorize would make now, and the usage now; nothing is held
  capture <authorization id> [--amount <amount>]    the whole hold without --amount; a part releases the rest
  release <authorization id>
  reverse <authorization id> [--amount <amount>]    all that is not yet reversed without --amount
  get <authorization id>
  list [--user <user id>] [--app <app id>] [--state PENDING|CAPTURED|RELEASED|EXPIRED|DECLINED] [--page-token <token>]

An <amount> is a decimal such as 15 or 12.50, in the fund currency (asked of the server unless --currency).

Options:
  --base-url <url>           the tenant base URL (default: $BASE_URL, else http://localhost:8080)
  --client-id <id>           API client id (default: $CLIENT_ID)
  --client-secret=<secret>   API client secret (default: $CLIENT_SECRET; with "=": a secret may begin with "-")
  --idempotency-key <key>    the Idempotency-Key of authorize, capture, release and reverse (default: a new
                             UUID v4); printed on stderr, so that a retry can send the same key again
  --currency <code>          the currency of --amount (default: the fund policy's)
  --help                     this text

Prints the answer's JSON on stdout (the Status body when the API refuses), the Idempotency-Key and
errors on stderr.

Exit code: 0 done (for authorize and simulate: approved), 1 declined (or would be), 2 usage error,
3 the API refused the request (4xx/5xx) or could not be reached.
`;

const EXIT = { done: 0, declined: 1, usage: 2, failed: 3 } as const;
const COMMANDS = ["authorize", "simulate", "capture", "release", "reverse", "get", "list"] as const;
type Command = (typeof COMMANDS)[number];
type Money = components["schemas"]["Money"];

function fail(message: string, code: number = EXIT.usage): never {
  process.stderr.write(`spend: ${message}\n`);
  process.exit(code);
}

function parseOptions() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        "base-url": { type: "string" },
        "client-id": { type: "string" },
        "client-secret": { type: "string" },
        "idempotency-key": { type: "string" },
        currency: { type: "string" },
        user: { type: "string" },
        app: { type: "string" },
        amount: { type: "string" },
        "hold-seconds": { type: "string" },
        capture: { type: "boolean" },
        metadata: { type: "string", multiple: true },
        state: { type: "string" },
        "page-token": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (e) {
    // parseArgs explains unknown options and missing values in one sentence; the stack adds nothing.
    fail(`${(e as Error).message.replace(/\s*\n\s*/g, " ")} (--help lists the options)`);
  }
}

const AMOUNT = /^(\d{1,19})(?:\.(\d{1,9}))?$/;

/** "12.5" → Money, by string arithmetic (never through a float); the server checks the range. */
function parseAmount(text: string, currencyCode: string): Money {
  const m = AMOUNT.exec(text.trim());
  if (!m) fail(`--amount must be a decimal such as 15 or 12.50 (no sign, at most 9 decimals), not "${text}"`);
  return { currencyCode, units: m[1]!.replace(/^0+(?=\d)/, ""), nanos: Number((m[2] ?? "").padEnd(9, "0")) };
}


function metadataOf(pairs: string[] | undefined): Record<string, string> | undefined {
  if (!pairs) return undefined;
  const entries = pairs.map((pair) => {
    const at = pair.indexOf("=");
    if (at < 1) fail(`--metadata takes key=value, not "${pair}"`);
    return [pair.slice(0, at), pair.slice(at + 1)] as const;
  });
  return Object.fromEntries(entries);
}

const { values, positionals } = parseOptions();
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(EXIT.done);
}
const [command, id, ...extra] = positionals;
if (!command) fail("a command is required: authorize, simulate, capture, release, reverse, get or list (--help lists them)");
if (!(COMMANDS as readonly string[]).includes(command)) fail(`unknown command "${command}" (--help lists the commands)`);
const cmd = command as Command;
const decides = cmd === "authorize" || cmd === "simulate";
const takesId = !decides && cmd !== "list";
if (takesId && !id) fail(`${cmd} needs the authorization id`);
if (extra.length > 0 || (!takesId && id)) fail(`unexpected argument "${takesId ? extra[0] : id}"`);

const baseUrl = (values["base-url"] ?? process.env.BASE_URL ?? "") || "http://localhost:8080";
const clientId = values["client-id"] ?? process.env.CLIENT_ID;
const clientSecret = values["client-secret"] ?? process.env.CLIENT_SECRET;
if (!clientId || !clientSecret) fail("client credentials are required: --client-id and --client-secret=, or CLIENT_ID and CLIENT_SECRET");
if (decides && (!values.user || !values.app || !values.amount)) fail(`${cmd} needs --user, --app and --amount`);
// Checked before anything is sent (the currency, when not given, is asked of the server later).
if (values.amount !== undefined) parseAmount(values.amount, "");
const metadata = metadataOf(values.metadata);
const holdSeconds = values["hold-seconds"];
if (holdSeconds !== undefined && !/^\d{1,9}$/.test(holdSeconds)) fail("--hold-seconds must be a whole number of seconds");

const client = createApiClient({ baseUrl, credentials: { clientId, clientSecret } });

async function currency(api: ApiClient): Promise<string> {
  if (values.currency) return values.currency;
  const { data, error, response } = await api.GET("/api/v1/funds/policy");
  if (!data) return answer({ error, response });
  return data.fundPolicy.currencyCode;
}

/** Prints the answer and exits with the code it means. */
function answer(result: { data?: unknown; error?: unknown; response: Response }): never {
  const { data, error, response } = result;
  process.stdout.write(`${JSON.stringify(data ?? error ?? null, null, 2)}\n`);
  if (!response.ok) {
    const reason = (error as { details?: { reason?: string }[] } | undefined)?.details?.find((d) => d.reason)?.reason;
    fail(`the API answered ${response.status}${reason ? ` ${reason}` : ""}`, EXIT.failed);
  }
  const { authorization, decision } = data as { authorization?: { state?: string }; decision?: { approved?: boolean } };
  const declined = authorization?.state === "SPEND_AUTHORIZATION_STATE_DECLINED" || decision?.approved === false;
  process.exit(decides && declined ? EXIT.declined : EXIT.done);
}

async function run(): Promise<never> {
  const key = values["idempotency-key"] ?? randomUUID();
  const header = { "Idempotency-Key": key };
  const path = { authorization_id: id! };
  const amount = values.amount === undefined ? {} : { amount: parseAmount(values.amount, await currency(client)) };
  if (cmd !== "get" && cmd !== "list" && cmd !== "simulate") process.stderr.write(`Idempotency-Key: ${key}\n`);
  switch (cmd) {
    case "authorize":
    case "simulate": {
      const body = {
        userId: values.user!,
        appId: values.app!,
        amount: amount.amount!,
        ...(holdSeconds === undefined ? {} : { holdSeconds: Number(holdSeconds) }),
        ...(values.capture ? { capture: true } : {}),
        ...(metadata ? { metadata } : {}),
      };
      if (cmd === "simulate") return answer(await client.POST("/api/v1/funds/spend-authorizations/simulate", { body }));
      return answer(await client.POST("/api/v1/funds/spend-authorizations", { params: { header }, body }));
    }
    case "capture":
      return answer(await client.POST("/api/v1/funds/spend-authorizations/{authorization_id}/capture", { params: { path, header }, body: amount }));
    case "release":
      return answer(await client.POST("/api/v1/funds/spend-authorizations/{authorization_id}/release", { params: { path, header }, body: {} }));
    case "reverse":
      return answer(await client.POST("/api/v1/funds/spend-authorizations/{authorization_id}/reverse", { params: { path, header }, body: amount }));
    case "get":
      return answer(await client.GET("/api/v1/funds/spend-authorizations/{authorization_id}", { params: { path } }));
    case "list": {
      const state = values.state ? (values.state.startsWith("SPEND_") ? values.state : `SPEND_AUTHORIZATION_STATE_${values.state.toUpperCase()}`) : undefined;
      const query = {
        ...(values.user ? { user_id: values.user } : {}),
        ...(values.app ? { app_id: values.app } : {}),
        ...(state ? { state } : {}),
        ...(values["page-token"] ? { page_token: values["page-token"] } : {}),
      };
      return answer(await client.GET("/api/v1/funds/spend-authorizations", { params: { query } }));
    }
  }
}

try {
  await run();
} catch (e) {
  // Refused credentials and an unreachable server are said in one line, without a stack.
  if (e instanceof TokenError) fail(`sign-in refused (${e.status}${e.error ? ` ${e.error}` : ""}): check the client id and secret`, EXIT.failed);
  fail(`could not reach ${baseUrl}: ${(e as Error).message}`, EXIT.failed);
}
