// The refusals each sender kind's intake documents for the body's transport (a byte order mark, a
// number past a double, a missing or other Content-Type, a Content-Encoding), a sender's secret of
// another form on rotation, and the sandbox clock's 413 and 422: each answered as its example says.
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawRequest } from "../../support/raw-http.js";
import { SENDER_KINDS, senderBody, senderHeaders, senderListeners, type SenderKind, type SenderListener } from "../../support/sender-deliveries.js";
import { bootstrapToken, startTestServer, type TestServer } from "../../support/server.js";

let ts: TestServer;
let senders: Record<SenderKind, SenderListener>;
beforeAll(async () => {
  ts = await startTestServer({}, undefined, { sandbox: true });
  senders = await senderListeners(ts);
});
afterAll(async () => ts?.stop());

const answerOf = (text: string) => JSON.parse(text) as { message: string; details: { reason?: string }[] };
const expectRefusal = (answer: { status: number; text: string }, status: number, reason: string, message: string) => {
  const body = answerOf(answer.text);
  expect([answer.status, body.details[0]?.reason, body.message]).toEqual([status, reason, message]);
};

describe.each(SENDER_KINDS)("%s intake", (kind) => {
  const send = async (bytes: Buffer, change: (headers: Record<string, string>) => Record<string, string> = (h) => h) => {
    const id = `evt_${Math.random().toString(36).slice(2)}`;
    const headers = await senderHeaders(kind, senders[kind].secret, bytes.toString("utf8"), { id, timestamp: String(Math.floor(ts.clock.now() / 1000)) });
    return rawRequest(ts.url, "POST", new URL(senders[kind].url).pathname, change(headers), bytes);
  };
  const body = () => Buffer.from(senderBody(kind, `evt_${Math.random().toString(36).slice(2)}`));

  it("a body beginning with a byte order mark is 400 MALFORMED_BODY", async () => {
    expectRefusal(await send(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body()])), 400, "MALFORMED_BODY", "the request body begins with a byte order mark");
  });

  it("a number past the range of a double is 400 naming its field", async () => {
    expectRefusal(await send(Buffer.from('{"id":"evt_1","amount":1e309}')), 400, "INVALID_ARGUMENT", "body.amount: must not contain numbers beyond the range of a double (about 1.8e308)");
  });

  it("no Content-Type is 400 MISSING_HEADER; another is 400 UNSUPPORTED_CONTENT_TYPE", async () => {
    const without = ({ "Content-Type": _, ...rest }: Record<string, string>) => rest;
    expectRefusal(await send(body(), without), 400, "MISSING_HEADER", "headers.Content-Type: is required");
    expectRefusal(await send(body(), (h) => ({ ...h, "Content-Type": "text/plain" })), 400, "UNSUPPORTED_CONTENT_TYPE", "headers.Content-Type: must be application/json");
  });

  it("a Content-Encoding other than identity is 415", async () => {
    expectRefusal(await send(gzipSync(body()), (h) => ({ ...h, "Content-Encoding": "gzip" })), 415, "UNSUPPORTED_MEDIA_TYPE", "unsupported request body encoding");
  });
});

describe("a sender's secret and the sandbox clock", () => {
  it("RotateWebhookSecret of a stripe listener with a secret of another form is 400", async () => {
    const automation = (await ts.admin.GET("/api/v1/automations", {})).data!.list!.find((a) => JSON.stringify(a.automation?.triggers).includes(senders.stripe.listenerId));
    const answer = await ts.admin.POST("/api/v1/automations/{id}/webhook-secret", { params: { path: { id: automation!.automation!.id! } }, body: { webhookSecret: "not-a-stripe-secret-at-all" } as never });
    expect([answer.response.status, (answer.error as { message?: string }).message]).toEqual([400, "body.webhookSecret: must be whsec_ and 16 to 250 letters and digits"]);
  });

  it("SandboxClockService.Get with a body over the limit is 413; Advance with a key reused for another body is 422", async () => {
    const auth = { Authorization: `Bearer ${await bootstrapToken(ts.url)}` };
    const big = Buffer.from(JSON.stringify({ x: "x".repeat(300 * 1024) }));
    expectRefusal(await rawRequest(ts.url, "GET", "/api/v1/sandbox/clock", { ...auth, "Content-Type": "application/json" }, big), 413, "PAYLOAD_TOO_LARGE", "the request body exceeds the limit");
    const advance = (duration: string) => rawRequest(ts.url, "POST", "/api/v1/sandbox/clock/advance", { ...auth, "Content-Type": "application/json", "Idempotency-Key": "sender-refusals-advance" }, Buffer.from(JSON.stringify({ duration })));
    expect((await advance("1s")).status).toBe(200);
    expectRefusal(await advance("2s"), 422, "IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was used for a different request; use a new key for a new request");
  });
});
