// What a request holds, read as the contract says: a query as RFC 3986 writes one (its reserved
// characters as they are, `+` a space, anything else percent-encoded UTF-8) on every operation that
// takes query parameters; the output-only fields of an object read and sent back ignored, never
// stored (the fund policy, automations, a suspension's start); a required body that is empty refused,
// with nothing changed; time-zone names stored and answered by their canonical names.
// This file owns its server: the fund policy is tenant-wide.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { contract, deref, operations, type Operation } from "../../support/contract.js";
import { rawExchange, rawRequest, type RawAnswer } from "../../support/raw-http.js";
import { bootstrapToken, type TestServer } from "../../support/server.js";
import { amount, expectError, HOUR, iso, shown, type Funds } from "../limits/helpers.js";
import { appWithLimit, authorized, money, startSpendServer, type Spends } from "../spends/helpers.js";
import { automationsApi, createHooked, sendHmac, type AutomationsApi } from "../webhooks/helpers.js";
import { webhookTrigger } from "../../support/triggers.js";

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let subjectId: string;
let automations: AutomationsApi;
/** The bootstrap admin's Authorization header, with a token fresh at the server's clock. */
let auth: Record<string, string>;
const freshAuth = async () => (auth = { Authorization: `Bearer ${await bootstrapToken(ts.url)}` });

beforeAll(async () => {
  const server = await startSpendServer();
  ({ ts, admin, spend } = server);
  subjectId = server.subject.userId;
  automations = automationsApi(ts.admin);
  await freshAuth();
});
afterAll(async () => ts?.stop());

const LIST = "/api/v1/funds/spend-authorizations";
const ids = (text: string) => (JSON.parse(text) as { list: { authorization: { id: string } }[] }).list.map((v) => v.authorization.id);
const get = (target: string, requestId = "inputs") => rawRequest(ts.url, "GET", target, { ...auth, "X-Request-Id": requestId });
const described = (a: RawAnswer) => `${a.status} ${a.text.slice(0, 300)}`;

/** An operation's parameters, its path's included. */
const parametersOf = (op: Operation) => [...((contract.paths[op.path].parameters ?? []) as object[]), ...((op.op.parameters ?? []) as object[])].map((p) => deref(p));

/** Operations with query parameters, a target for each with its path parameters filled in, and their query parameters. */
const queried = operations
  .map((op) => ({ op, query: parametersOf(op).filter((p) => p.in === "query").map((p) => p.name as string) }))
  .filter(({ query }) => query.length > 0)
  .map(({ op, query }) => ({ op, query, path: op.path.replace(/\{[a-z_]+\}/g, "inputs-1") }));

const name = (op: Operation) => op.operationId.replace(/^svc\.api\./, "");

describe("a query is read as RFC 3986 writes it, on every operation that takes query parameters", () => {
  it("covers every list", () => {
    expect(queried.map(({ op }) => op.operationId)).toContain("svc.api.funds.v1.SpendService.List");
    expect(queried.length).toBeGreaterThanOrEqual(8);
  });

  it("the contract's own window_start example, written as it is, lists the window's authorizations", async () => {
    const list = operations.find((o) => o.operationId === "svc.api.funds.v1.SpendService.List")!;
    const example = parametersOf(list).find((p) => p.name === "window_start")!.example as string;
    expect(example).toBe("2026-11-01T00:00:00Z");
    const app = await appWithLimit(admin, subjectId, "100", "PERIOD_KIND_MONTHLY");
    const made = await authorized(spend, { userId: subjectId, appId: app, amount: money("1") });
    const asWritten = await get(`${LIST}?window_start=${example}&app_id=${app}`);
    expect(asWritten.status, described(asWritten)).toBe(200);
    expect(ids(asWritten.text)).toEqual([made.id]);
    expect((await get(`${LIST}?window_start=${encodeURIComponent(example)}&app_id=${app}`)).text).toBe(asWritten.text);
    // `+` is a space, as in forms: an offset's plus sign is written %2B.
    expect(ids((await get(`${LIST}?window_start=2026-11-01T00:00:00%2B00:00&app_id=${app}`)).text)).toEqual([made.id]);
    const plus = await get(`${LIST}?window_start=2026-11-01T00:00:00+00:00&app_id=${app}`);
    expect(plus.status).toBe(400);
    expect(plus.text).toBe((await get(`${LIST}?window_start=2026-11-01T00:00:00%2000:00&app_id=${app}`)).text);
    // A user id with `:` (its pattern allows one), as it is.
    const colon = await get(`${LIST}?user_id=tenant:${subjectId}`);
    expect(colon.status, described(colon)).toBe(200);
  });

  for (const { op, query, path } of queried) {
    it(`${name(op)}: each reserved character RFC 3986 allows in a query reads as its percent-encoded form`, async () => {
      for (const parameter of query) {
        for (const c of [":", "/", "?", "@", "!", "$", "'", "(", ")", "*", ",", ";", "="]) {
          const requestId = `reserved-${parameter}`;
          const written = await get(`${path}?${parameter}=a${c}b`, requestId);
          const encoded = await get(`${path}?${parameter}=a${encodeURIComponent(c).replace(/[!'()*]/g, (x) => `%${x.charCodeAt(0).toString(16).toUpperCase()}`)}b`, requestId);
          expect(written.status, `${parameter} ${c}`).not.toBe(401);
          expect(written.status, `${parameter} ${c}`).not.toBe(403);
          expect(described(written), `${parameter} ${c}`).toBe(described(encoded));
        }
      }
    });

    it(`${name(op)}: bad percent-encoding, bytes that are not UTF-8 and characters a query may not hold are 400, the value not repeated`, async () => {
      for (const parameter of query) {
        for (const bad of ["%", "a%zz", "%ff", "%c0%af", "%e2%82", "%ed%a0%80", "a[0]", "a]", 'a"b', "a{b}", "a|b", "a\\b", "a^b", "a`b", "a<b>"]) {
          const answer = await get(`${path}?${parameter}=${bad}`);
          expect({ status: answer.status, message: (JSON.parse(answer.text) as { message: string }).message }, `${parameter}=${bad}`).toEqual({
            status: 400,
            message: `query.${parameter}: must be percent-encoded UTF-8`,
          });
        }
      }
      // A name the operation does not declare is not repeated either.
      expect(JSON.parse((await get(`${path}?zz%ff=1`)).text)).toMatchObject({ message: "query: must be percent-encoded UTF-8" });
    });
  }
});

describe("a date-time in a request is at most 64 characters", () => {
  // RFC 3339 admits any number of fraction digits: 43 make 64 characters with `Z`.
  const ofLength = (n: number) => `2026-11-01T00:00:00.${"0".repeat(n - 21)}Z`;

  it("window_start of 64 characters is read; of 65, 400 INVALID_ARGUMENT naming it", async () => {
    expect(ofLength(64)).toHaveLength(64);
    const read = await get(`${LIST}?window_start=${ofLength(64)}`);
    expect(read.status, described(read)).toBe(200);
    const refused = await get(`${LIST}?window_start=${ofLength(65)}`);
    expect(refused.status, described(refused)).toBe(400);
    const body = JSON.parse(refused.text) as { message: string; details: { reason?: string }[] };
    expect(body.details[0]?.reason).toBe("INVALID_ARGUMENT");
    expect(body.message).toContain("query.window_start");
  });
});

describe("output-only fields of an object read from an answer are ignored when it is sent back", () => {
  it("FundPolicyService.Update: the policy read, sent back as it is, is 200 and changes nothing; a sent updatedAt is never stored", async () => {
    // Never updated yet: updatedAt null.
    const first = unwrap(await admin.policyGet()).fundPolicy;
    expect(unwrap(await admin.policyUpdate({ fundPolicy: first })).fundPolicy).toEqual(first);

    const defaults = { limit: amount("50"), period: "PERIOD_KIND_MONTHLY", suspension: { reason: "paused" } };
    const changed = unwrap(await admin.policyUpdate({ fundPolicy: { ...first, defaultControls: defaults } })).fundPolicy;
    expect(changed.updatedAt).toBe(iso(ts.clock.now()));
    ts.clock.advance(HOUR);
    const read = unwrap(await admin.policyGet()).fundPolicy;
    expect(read.defaultControls?.suspension?.suspendedAt).toBe(changed.updatedAt);
    expect(unwrap(await admin.policyUpdate({ fundPolicy: read })).fundPolicy).toEqual(read);
    expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(read);

    // Read-only values sent otherwise are ignored as well: the policy's and its suspension's.
    const rewritten = { ...read, updatedAt: "2001-01-01T00:00:00Z", defaultControls: { ...read.defaultControls, suspension: { reason: "paused", suspendedAt: "not a time" } } };
    expect(unwrap(await admin.policyUpdate({ fundPolicy: rewritten })).fundPolicy).toEqual(read);
    const moved = unwrap(await admin.policyUpdate({ fundPolicy: { ...rewritten, defaultControls: { ...rewritten.defaultControls, limit: amount("60") } } })).fundPolicy;
    expect(moved).toEqual({ ...read, defaultControls: { ...read.defaultControls, limit: amount("60") }, updatedAt: iso(ts.clock.now()) });
    unwrap(await admin.policyUpdate({ fundPolicy: { ...moved, defaultControls: null } }));
  });

  it("AppCapService.Set: a suspension's suspendedAt sent is ignored, whatever it holds", async () => {
    const app = "inputs-cap";
    const set = unwrap(await admin.capSet(app, { controls: { limit: amount("5"), suspension: { reason: "r", suspendedAt: "not a time" } } })).appCap;
    expect(set.controls).toEqual(shown({ limit: amount("5"), suspension: { reason: "r", suspendedAt: iso(ts.clock.now()) } }));
    ts.clock.advance(HOUR);
    expect(unwrap(await admin.capSet(app, { controls: set.controls })).appCap).toEqual(set);
  });

  it("CreateAutomation: an automation read, sent back, makes a new one (new id, listener and secret, created now)", async () => {
    const hook = await createHooked(ts);
    ts.clock.advance(HOUR);
    const read = unwrap(await automations.get(hook.id)).automation;
    expect(read).toMatchObject({ id: hook.id, createdAt: expect.any(String), updatedAt: expect.any(String), lastExecutedAt: null });
    const copy = unwrap(await automations.create(read));
    const now = iso(ts.clock.now());
    expect(copy.automation).toMatchObject({ displayName: read.displayName, isDraft: read.isDraft, enabled: read.enabled, createdAt: now, updatedAt: now });
    expect(copy.automation.id).not.toBe(hook.id);
    const trigger = webhookTrigger(copy.automation);
    expect(trigger?.listenerId).not.toBe(hook.listenerId);
    expect(trigger?.url).not.toBe(hook.url);
    expect(copy.webhookSecret).toEqual(expect.any(String));
    expect((await sendHmac(ts, trigger!.url!, copy.webhookSecret!)).status).toBe(200);
    // The automation read from is as it was.
    expect(unwrap(await automations.get(hook.id)).automation).toEqual(read);
  });

  it("UpdateAutomation: an automation read, changed and sent back, changes only the path's automation; its id, listener and dates stay the server's", async () => {
    const hook = await createHooked(ts);
    const other = unwrap(await automations.get((await createHooked(ts)).id)).automation;
    ts.clock.advance(HOUR);
    const read = unwrap(await automations.get(hook.id)).automation;
    const sent = { ...read, id: other.id, displayName: "renamed", createdAt: "2001-01-01T00:00:00Z", updatedAt: "2001-01-01T00:00:00Z", lastExecutedAt: "2001-01-01T00:00:00Z" };
    const saved = unwrap(await automations.update(hook.id, sent, "displayName,triggers"));
    expect(saved.automation).toEqual({ ...read, displayName: "renamed", updatedAt: iso(ts.clock.now()) });
    expect(saved.webhookSecret).toBeNull();
    expect(unwrap(await automations.get(other.id!)).automation).toEqual(other);
    // The listener is the one it had, with its secret.
    expect((await sendHmac(ts, hook.url, hook.secret)).status).toBe(200);
  });
});

describe("a required body that is empty is 400 MALFORMED_BODY, and changes nothing", () => {
  it("Capture: no bytes (Content-Length: 0, no body at all, a chunked body without data) captures nothing; {} captures the hold", async () => {
    const app = await appWithLimit(admin, subjectId, "100", "PERIOD_KIND_MONTHLY");
    const hold = await authorized(spend, { userId: subjectId, appId: app, amount: money("30") });
    const path = `${LIST}/${hold.id}/capture`;
    const json = { ...(await freshAuth()), "Content-Type": "application/json" };
    const empty = { status: 400, reason: "MALFORMED_BODY", message: "the request body is empty" };
    const seen = (a: RawAnswer) => {
      const body = JSON.parse(a.text) as { message: string; details: { reason?: string }[] };
      return { status: a.status, reason: body.details.find((d) => d.reason)?.reason, message: body.message };
    };
    expect(seen(await rawRequest(ts.url, "POST", path, json, Buffer.alloc(0)))).toEqual(empty);
    // Without a body, Node's client sends it chunked, with no chunk of data.
    expect(seen(await rawRequest(ts.url, "POST", path, json))).toEqual(empty);
    const host = new URL(ts.url).host;
    const unframed = await rawExchange(ts.url, [`POST ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${auth.Authorization}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n`]);
    expect(unframed).toMatch(/^HTTP\/1\.1 400 /);
    expect(unframed).toContain('"reason":"MALFORMED_BODY"');
    expect(seen(await rawRequest(ts.url, "POST", path, { ...json, "Idempotency-Key": "inputs-empty" }, Buffer.alloc(0)))).toEqual(empty);

    expect(unwrap(await spend.get(hold.id)).authorization).toEqual(hold);
    expect(unwrap(await admin.effective(subjectId, app)).effective.usage).toMatchObject({ spent: money("0"), held: money("30") });
    const captured = unwrap(await spend.capture(hold.id, {})).authorization;
    expect(captured).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED", capturedAmount: money("30") });
    // Reverse too: an empty body reverses nothing.
    expect(seen(await rawRequest(ts.url, "POST", `${LIST}/${hold.id}/reverse`, json, Buffer.alloc(0)))).toEqual(empty);
    expect(unwrap(await spend.get(hold.id)).authorization).toEqual(captured);
  });
});

describe("time-zone names are stored and answered by their canonical names", () => {
  const zone = async (timeZone: string) => unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", timeZone, defaultControls: null }, updateMask: "timeZone" })).fundPolicy;

  it("utc is UTC, Europe/paris is Europe/Paris, a link is its zone, an alias of UTC is UTC; the windows are the zone's", async () => {
    try {
      expect((await zone("utc")).timeZone).toBe("UTC");
      expect(unwrap(await admin.policyGet()).fundPolicy.timeZone).toBe("UTC");
      const paris = await zone("Europe/paris");
      expect(paris.timeZone).toBe("Europe/Paris");
      expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(paris);
      // November in Paris begins at 23:00 UTC on 31 October.
      const app = await appWithLimit(admin, subjectId, "100", "PERIOD_KIND_MONTHLY");
      expect(unwrap(await admin.effective(subjectId, app)).effective.usage).toMatchObject({ windowStart: "2026-10-31T23:00:00.000Z", windowEnd: "2026-11-30T23:00:00.000Z" });
      // The same zone in another spelling is no change.
      ts.clock.advance(HOUR);
      expect(await zone("EUROPE/PARIS")).toEqual(paris);
      expect((await zone("US/Eastern")).timeZone).toBe("America/New_York");
      expect((await zone("Asia/Calcutta")).timeZone).toBe("Asia/Kolkata");
      expect((await zone("Etc/UTC")).timeZone).toBe("UTC");
      expectError(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", timeZone: "+01:00", defaultControls: null }, updateMask: "timeZone" }), 400, "INVALID_TIME_ZONE");
    } finally {
      await zone("UTC");
    }
  });
});
