// Hostile transport. fast-check generates what surrounds a request rather than what it says, on the
// API's operations and the webhook intake: encodings (Content-Encoding values, charsets, byte order
// marks, compressed or UTF-16 bytes), framing sent over bare connections (chunk sizes that lie or do
// not parse, Transfer-Encoding variants, Content-Lengths shorter or longer than the body or not a
// number, requests split across writes), and header fields by the hundred or by the kilobyte. Every
// answer is a 2xx or a 4xx with the Status body, never a 5xx; every request gets an answer before the
// server closes the connection (where HTTP leaves no room, after the answer already under way); and
// the server keeps answering. Seeded: FC_SEED replays a run, FC_RUNS sets the number of cases.
import { createHmac } from "node:crypto";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operations, schemaErrors } from "../../support/contract.js";
import { testDialect } from "../../support/database.js";
import { parseAnswers, rawExchange, rawRequest, type ParsedAnswer } from "../../support/raw-http.js";
import { reliabilitySuite } from "../../support/reliability.js";
import { bootstrapToken, startTestServer, type TestServer } from "../../support/server.js";
import { createHooked, newEventId, unixTime, type Hooked } from "../webhooks/helpers.js";

const SEED = Number(process.env.FC_SEED ?? 20_261_123);
const RUNS = Number(process.env.FC_RUNS ?? 25);
/**
 * How long the sender waits for an answer before it ends its side (Node's server then drops a
 * request it has not answered, so a slow answer would read as none): 300 ms was once too short
 * for the whole PostgreSQL suite on two cores.
 */
const ANSWER_WAIT_MS = 1_000;

const counts = reliabilitySuite("hostile-transport", testDialect());
let ts: TestServer;
let bearer: string;
let hook: Hooked;

beforeAll(async () => {
  // The sandbox, so that its own operations (bound there only) are sent hostile transport too.
  ts = await startTestServer({}, undefined, { sandbox: true });
  bearer = await bootstrapToken(ts.url);
  hook = await createHooked(ts);
});
afterAll(async () => ts?.stop());

const options = (runs: number) => ({ seed: SEED, numRuns: runs, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: false });

/** Where a generated request goes: the intake, or an API operation as the bootstrap admin. */
interface Target {
  name: string;
  method: string;
  path: string;
  /** The headers that make the request acceptable, for these body bytes (the intake's signature covers them). */
  headers: (body: Buffer) => Record<string, string>;
  /** A body it takes. */
  body: string;
}

const intakeTarget = (): Target => ({
  name: "intake",
  method: "POST",
  path: new URL(hook.url).pathname,
  body: '{"n":1}',
  headers: (body) => {
    const timestamp = unixTime(ts);
    const eventId = newEventId();
    return {
      "Webhook-Timestamp": timestamp,
      "Webhook-Event-Id": eventId,
      "Webhook-Signature": createHmac("sha256", hook.secret).update(`${timestamp}.${eventId}.`).update(body).digest("base64url"),
    };
  },
});

/** The API operations that take a JSON body, sent `{}` (most then answer 400 or 404: the transport is what is tested). */
const jsonOperations = operations.filter((o) => o.op.requestBody?.content?.["application/json"] && o.op["x-raw-request"] !== true);
const apiTarget = (o: (typeof operations)[number]): Target => ({
  name: o.operationId.replace(/^svc\.api\./, ""),
  method: o.method.toUpperCase(),
  path: o.path.replace(/\{[a-z_]+\}/g, "hostile-1"),
  body: o.operationId.endsWith("CheckAutomationSteps") ? '{"automationSteps":[]}' : "{}",
  headers: () => ({ Authorization: `Bearer ${bearer}` }),
});
const checkSteps = () => apiTarget(jsonOperations.find((o) => o.operationId.endsWith("CheckAutomationSteps"))!);
/** An operation that takes no body, sent one anyway. */
const listUsers = (): Target => ({ name: "UserService.List", method: "GET", path: "/api/v1/users", body: "{}", headers: () => ({ Authorization: `Bearer ${bearer}` }) });

const reasonOf = (body: Record<string, any> | undefined): string | undefined => body?.details?.find((d: any) => d.reason)?.reason;
const describeAnswer = (a: { status: number; text: string }) => `${a.status} ${a.text.slice(0, 300)}`;

/** A 2xx, or a 4xx with the Status body: never a 5xx. */
function expectAcceptableAnswer(a: { status: number; text: string }): void {
  expect(a.status >= 200 && a.status < 500, describeAnswer(a)).toBe(true);
  if (a.status >= 400) expect(schemaErrors("Status", JSON.parse(a.text)), describeAnswer(a)).toEqual([]);
}

async function expectStillUp(): Promise<void> {
  expect((await fetch(`${ts.url}/healthz`)).status).toBe(200);
}

describe("encodings: Content-Encoding, charset and byte order mark, on every JSON operation and the intake", () => {
  const coding = fc.option(fc.oneof(fc.constantFrom("gzip", "deflate", "br", "x-gzip", "compress", "zstd", "identity", "IDENTITY", "gzip, identity", "identity, gzip", "*"), fc.stringMatching(/^[a-z0-9-]{1,12}$/)), { nil: undefined });
  const charset = fc.option(
    fc.oneof(fc.constantFrom("utf-8", "UTF-8", "Utf-8", '"utf-8"', "utf8", "utf-16", "utf-16le", "UTF-16BE", "utf-32", "latin1", "iso-8859-1", "us-ascii", "windows-1252", "utf-7"), fc.stringMatching(/^[a-z0-9-]{1,10}$/)),
    { nil: undefined },
  );
  const bytes = fc.constantFrom("plain", "gzip", "utf-16le");
  const target = fc.oneof({ weight: 1, arbitrary: fc.constant("intake") }, { weight: 2, arbitrary: fc.constantFrom(...jsonOperations.map((o) => o.operationId)) });

  /** The rule every JSON body is held to (core/json-body), said again here. */
  const sentAsIs = (c: string | undefined) => c === undefined || c.trim().toLowerCase() === "identity";
  const utf8Charset = (c: string | undefined) => c === undefined || c.replace(/^"(.*)"$/, "$1").toLowerCase() === "utf-8";

  it("a charset other than utf-8 or any Content-Encoding is 415, else a byte order mark is 400 MALFORMED_BODY, else what the body says", async () => {
    await fc.assert(
      fc.asyncProperty(target, coding, charset, fc.boolean(), bytes, (operationId, contentEncoding, cs, bom, kind) =>
        counts.check(async () => {
          const t = operationId === "intake" ? intakeTarget() : apiTarget(jsonOperations.find((o) => o.operationId === operationId)!);
          const text = kind === "plain" ? Buffer.from(t.body) : kind === "gzip" ? gzipSync(t.body) : Buffer.from(t.body, "utf16le");
          const body = bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text]) : text;
          const headers: Record<string, string> = { ...t.headers(body), "Content-Type": `application/json${cs === undefined ? "" : `; charset=${cs}`}` };
          if (contentEncoding !== undefined) headers["Content-Encoding"] = contentEncoding;
          const answer = await rawRequest(ts.url, t.method, t.path, headers, body);
          expectAcceptableAnswer(answer);
          const json = JSON.parse(answer.text) as Record<string, any>;
          if (!sentAsIs(contentEncoding) || !utf8Charset(cs)) {
            expect([answer.status, reasonOf(json), json.message], describeAnswer(answer)).toEqual([415, "UNSUPPORTED_MEDIA_TYPE", "unsupported request body encoding"]);
          } else if (bom) {
            expect([answer.status, reasonOf(json), json.message], describeAnswer(answer)).toEqual([400, "MALFORMED_BODY", "the request body begins with a byte order mark"]);
          } else if (kind !== "plain") {
            expect([answer.status, reasonOf(json)], describeAnswer(answer)).toEqual([400, "MALFORMED_BODY"]);
          } else {
            expect(answer.status, describeAnswer(answer)).not.toBe(415);
            if (operationId === "intake") expect(answer.status, describeAnswer(answer)).toBe(200);
          }
        }),
      ),
      options(RUNS * 4),
    );
    await expectStillUp();
  }, 300_000);
});

/** How the body goes on the wire. */
type Framing =
  | { kind: "chunked"; transferEncoding: string; sizes: string[]; pieces: number[]; last: string; contentLength?: string }
  | { kind: "length"; contentLength: string };

const CHUNK_SIZE_LIES = ["zz", "-1", "0x", "", " ", "fffffffffffffffff", "1;", "g"];
const TRANSFER_ENCODINGS = ["chunked", "Chunked", "CHUNKED", "xchunked", "chunked, chunked", "gzip, chunked", "chunked, gzip", "identity", "chunked;q=1", "chunkedx", "identity, chunked"];
const LAST_CHUNKS = ["0\r\n\r\n", "0\r\nX-Trailer: 1\r\n\r\n", "0;ext=1\r\n\r\n", "0\r\n", "", "00\r\n\r\n"];

const framing = (bodyLength: number): fc.Arbitrary<Framing> =>
  fc.oneof(
    fc.record({
      kind: fc.constant("chunked" as const),
      transferEncoding: fc.oneof({ weight: 3, arbitrary: fc.constant("chunked") }, { weight: 2, arbitrary: fc.constantFrom(...TRANSFER_ENCODINGS) }),
      // Where the body is cut into chunks, and each chunk's size line: true, off by one, extended, or no size at all.
      pieces: fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, bodyLength - 1) }), { maxLength: 3 }).map((cuts) => [...cuts].sort((a, b) => a - b)),
      sizes: fc.array(fc.oneof({ weight: 4, arbitrary: fc.constant("true") }, { weight: 1, arbitrary: fc.constantFrom("+1", "-1", "HEX", "0PAD", "ext", ...CHUNK_SIZE_LIES) }), { minLength: 4, maxLength: 4 }),
      last: fc.oneof({ weight: 3, arbitrary: fc.constant("0\r\n\r\n") }, { weight: 2, arbitrary: fc.constantFrom(...LAST_CHUNKS) }),
      contentLength: fc.option(fc.constantFrom("0", String(bodyLength)), { nil: undefined, freq: 8 }),
    }),
    fc.record({
      kind: fc.constant("length" as const),
      contentLength: fc.oneof(
        { weight: 3, arbitrary: fc.integer({ min: 0, max: bodyLength + 8 }).map(String) },
        { weight: 1, arbitrary: fc.constantFrom(`+${bodyLength}`, `${bodyLength}, ${bodyLength}`, `0x${bodyLength.toString(16)}`, `${bodyLength}.0`, "-1", "", ` ${bodyLength} `, "99999999999999999999", "1e3") },
      ),
    }),
  );

/** The request's bytes: the head without framing headers, then the framing and the body as it says. */
function frame(head: string, body: Buffer, f: Framing): Buffer {
  if (f.kind === "length") return Buffer.concat([Buffer.from(`${head}Content-Length: ${f.contentLength}\r\n\r\n`), body]);
  const bounds = [0, ...f.pieces.filter((p) => p < body.length), body.length];
  const chunks = bounds.slice(1).map((end, i) => {
    const data = body.subarray(bounds[i], end);
    const size = f.sizes[i] ?? "true";
    const line =
      size === "true" ? data.length.toString(16)
      : size === "+1" ? (data.length + 1).toString(16)
      : size === "-1" ? Math.max(0, data.length - 1).toString(16)
      : size === "HEX" ? data.length.toString(16).toUpperCase()
      : size === "0PAD" ? `000${data.length.toString(16)}`
      : size === "ext" ? `${data.length.toString(16)};name="value"`
      : size;
    return Buffer.concat([Buffer.from(`${line}\r\n`), data, Buffer.from("\r\n")]);
  });
  const framingHeaders = `Transfer-Encoding: ${f.transferEncoding}\r\n${f.contentLength === undefined ? "" : `Content-Length: ${f.contentLength}\r\n`}`;
  return Buffer.concat([Buffer.from(`${head}${framingHeaders}\r\n`), ...chunks, Buffer.from(f.last)]);
}

/** How many chunks `frame` cuts a body of `length` bytes into. */
const bodyChunks = (length: number, f: Framing): number => (f.kind === "chunked" ? f.pieces.filter((p) => p < length).length + 1 : 0);

/** Splits `bytes` at `cuts` (fractions), for writes some milliseconds apart. */
const split = (bytes: Buffer, cuts: number[]): Buffer[] => {
  const at = [0, ...cuts.map((c) => Math.floor(c * bytes.length)).sort((a, b) => a - b), bytes.length];
  return at.slice(1).map((end, i) => bytes.subarray(at[i], end)).filter((b) => b.length > 0);
};

function expectAnsweredThenClosed(raw: string): ParsedAnswer[] {
  const answers = parseAnswers(raw);
  expect(answers.length, `no answer before the connection closed: ${JSON.stringify(raw.slice(0, 200))}`).toBeGreaterThan(0);
  for (const a of answers) expectAcceptableAnswer(a);
  return answers;
}

describe("framing over bare connections: chunk sizes, Transfer-Encoding, Content-Length", () => {
  const targets = () => [intakeTarget(), checkSteps(), listUsers()];

  it("every request is answered, 2xx or 4xx with the Status body, before the connection is closed; a body whose framing breaks is 400 MALFORMED_HTTP_REQUEST", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 2 }),
        fc.constantFrom("", "Connection: close\r\n", "Connection: keep-alive\r\n"),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 2 }),
        fc.integer({ min: 0, max: 30 }),
        framing(40),
        (which, connection, cuts, gapMs, f) =>
          counts.check(async () => {
            const t = targets()[which]!;
            const body = Buffer.from(t.body.padEnd(40, " "));
            const head = `${t.method} ${t.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${connection}${Object.entries(t.headers(body)).map(([k, v]) => `${k}: ${v}\r\n`).join("")}`;
            const bytes = frame(head, body, f);
            // The server is given ANSWER_WAIT_MS to answer; then the sender ends its side, so that a body the
            // server still waits for ends (Node refuses what it then holds, as it should).
            const answers = expectAnsweredThenClosed(await rawExchange(ts.url, split(bytes, cuts), { gapMs, halfCloseAfterMs: ANSWER_WAIT_MS }));
            const reasons = answers.map((a) => reasonOf(a.body));
            const usedChunks = bodyChunks(body.length, f);
            const chunkedRight =
              f.kind === "chunked" && f.transferEncoding.toLowerCase() === "chunked" && f.contentLength === undefined && f.sizes.slice(0, usedChunks).every((s) => ["true", "HEX", "0PAD", "ext"].includes(s)) && f.last.endsWith("\r\n\r\n");
            const lengthRight = f.kind === "length" && f.contentLength.trim() === String(body.length);
            if (chunkedRight || lengthRight) expect(reasons, answers.map(describeAnswer).join("\n")).not.toContain("MALFORMED_HTTP_REQUEST");
            // A transfer coding other than chunked alone (Node hands `gzip, chunked` over still gzipped), or a
            // Content-Length that is not a decimal number: no way to read the body as sent.
            const codingWrong = f.kind === "chunked" && f.transferEncoding.toLowerCase() !== "chunked";
            const lengthNotANumber = (f.kind === "length" || f.contentLength !== undefined) && !/^\s*\d+\s*$/.test(f.contentLength ?? "");
            if (codingWrong || lengthNotANumber || (f.kind === "chunked" && f.contentLength !== undefined)) {
              expect(reasons, answers.map(describeAnswer).join("\n")).toContain("MALFORMED_HTTP_REQUEST");
            }
          }),
      ),
      options(RUNS * 4),
    );
    await expectStillUp();
  }, 300_000);
});

describe("header fields: how many and how large", () => {
  const name = fc.stringMatching(/^[a-z0-9!#$%&'*+.^_`|~-]{1,20}$/).map((n) => `x-h-${n}`);
  const value = fc.oneof(fc.stringMatching(/^[ -~]{0,40}$/).map((v) => v.trim()), fc.integer({ min: 100, max: 9_000 }).map((n) => "v".repeat(n)), fc.constant("caf\u00e9"));
  const broken = fc.constantFrom("bad name: 1", "x-\u0001: 1", "x-nul: a\u0000b", "no-colon", ": empty-name", "x-lf: a\nb");

  it("more than 200 fields or 16 KB is 431 HEADERS_TOO_LARGE, a field that is not HTTP is 400, else the request's own answer", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.oneof(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 180, max: 230 }), fc.integer({ min: 400, max: 2_500 })),
        name,
        value,
        fc.array(fc.tuple(name, value), { maxLength: 6 }),
        fc.option(broken, { nil: undefined, freq: 4 }),
        (toIntake, repeated, repeatedName, repeatedValue, others, bad) =>
          counts.check(async () => {
            const t = toIntake ? intakeTarget() : listUsers();
            const body = Buffer.from(toIntake ? t.body : "");
            // At most some 64 KB of repeated fields: past 16 KB every size is the same refusal.
            const n = Math.min(repeated, Math.floor(65_536 / (repeatedName.length + repeatedValue.length + 4)));
            const fields = [...Object.entries(t.headers(body)), ...Array.from({ length: n }, () => [repeatedName, repeatedValue] as [string, string]), ...others].map(([k, v]) => `${k}: ${v}\r\n`);
            const head = `${t.method} ${t.path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${fields.join("")}${bad === undefined ? "" : `${bad}\r\n`}\r\n`;
            const answers = expectAnsweredThenClosed(await rawExchange(ts.url, [Buffer.concat([Buffer.from(head, "latin1"), body])], { halfCloseAfterMs: ANSWER_WAIT_MS }));
            // What Node counts against its 16 KB: the target, and each field's name and value.
            const size = t.path.length + head.split("\r\n").reduce((n, line) => n + line.replace(/:\s*/, "").length, 0);
            // Host, Connection, Content-Type and Content-Length, the fields, and the broken one.
            const count = fields.length + 4 + (bad === undefined ? 0 : 1);
            const first = answers[0]!;
            const reason = reasonOf(first.body);
            // Near 16 KB, which refusal comes first is Node's detail: either is right.
            if (size > 18 * 1024) expect([first.status, reason], describeAnswer(first)).toEqual([431, "HEADERS_TOO_LARGE"]);
            else if (bad !== undefined && size < 14 * 1024) expect([first.status, reason], describeAnswer(first)).toEqual([400, "MALFORMED_HTTP_REQUEST"]);
            else if (count > 200 && size < 14 * 1024) expect([first.status, reason], describeAnswer(first)).toEqual([431, "HEADERS_TOO_LARGE"]);
            else if (size < 14 * 1024) expect(first.status, describeAnswer(first)).toBe(200);
          }),
      ),
      options(RUNS * 2),
    );
    await expectStillUp();
  }, 300_000);
});
