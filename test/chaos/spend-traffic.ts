// Spend traffic for the chaos suite: clients that authorize (holds, short holds that expire, direct
// spends), capture, release and reverse against small limits while the servers are killed. Every
// request carries an Idempotency-Key and is resent with the same key and body until it is answered
// (a connection error is an unknown answer, not a failure). Afterwards:
// - every approved authorization answered to a caller exists, as answered; each key made exactly one;
// - every decision (read back from the API) is one a serial order gives: no approval over the limit;
// - the state of each authorization is what the answers the caller received say it is;
// - the ledger (read straight from the database) sums to the usage the API reports, per
//   authorization and per window;
// - fund events: an automation triggered by every spend authorized or declined has exactly one
//   execution per authorization that exists (an event recorded with its decision, whichever instance
//   died after the commit), and none for a decision that rolled back.
import { randomUUID } from "node:crypto";
import SQLite from "better-sqlite3";
import pg from "pg";
import { expect } from "vitest";
import { createApiClient, errorReason, unwrap, type ApiClient, type components } from "../../src/client/index.js";
import type { Counter } from "../support/reliability.js";
import { NANOS, nanosOf, usd } from "../http/spends/load-helpers.js";

type Authorization = components["schemas"]["SpendAuthorization"];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Each app's monthly limit: small, so that the limit binds within the few dozen spends a run makes, and headroom given back is taken again. */
const LIMIT = 4n * NANOS;
const APPS = 2;
/** How long one request is resent before the test gives up on it: through three kills and restarts. */
const SETTLE_MS = 150_000;

interface Answer {
  response: Response;
  data?: unknown;
  error?: unknown;
}

/** What the callers were told about one authorization, in order. */
interface Known {
  key: string;
  authorization: Authorization;
  /** The capture answered (state CAPTURED, its capturedAmount), or a release answered RELEASED. */
  final?: { state: string; captured: bigint };
  /** Reversals answered 200. */
  reversed: bigint;
}

export interface SpendTrafficOptions {
  url: (i: number) => string;
  instances: number;
  admin: { clientId: string; clientSecret: string };
  spenders: number;
  random: () => number;
}

export class SpendTraffic {
  private loading = true;
  private workers: Promise<void>[] = [];
  private readonly spends: Promise<void>[] = [];
  private readonly known = new Map<string, Known>();
  private readonly keys = new Set<string>();
  private readonly declined: Authorization[] = [];
  /** Answers nobody expected (5xx, an unexpected refusal), with what was sent. */
  readonly refused: string[] = [];
  unknownAnswers = 0;

  private constructor(
    private readonly o: SpendTrafficOptions,
    private readonly userId: string,
    private readonly appIds: string[],
    /** The automation every decision's fund event starts. */
    private readonly fundAutomationId: string,
  ) {
    // A timeout, so that a request to a server frozen mid-kill counts as unknown and is resent.
    this.clients = Array.from({ length: o.instances }, (_, i) => createApiClient({ baseUrl: o.url(i), credentials: o.admin, fetch: (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(20_000) }) }));
  }

  /** A client per instance, each keeping its access token (a token request per call would be most of the work). */
  private readonly clients: ApiClient[];

  private client(i: number): ApiClient {
    return this.clients[i % this.o.instances]!;
  }

  /** A subject and its apps, each with an amount limit, set through the first instance. */
  static async start(o: SpendTrafficOptions): Promise<SpendTraffic> {
    const admin = createApiClient({ baseUrl: o.url(0), credentials: o.admin });
    const userId = unwrap(await admin.POST("/api/v1/users", { body: { displayName: "Chaos spender", email: `chaos-spender-${randomUUID()}@example.com`, roles: ["ROLE_USER"] } })).user.id!;
    const appIds = Array.from({ length: APPS }, (_, i) => `chaos-app-${i}`);
    for (const appId of appIds) {
      unwrap(await admin.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { params: { path: { user_id: userId, app_id: appId } }, body: { limit: { amount: { money: usd(LIMIT) } }, period: "PERIOD_KIND_MONTHLY" } }));
    }
    // Every decision, approved or declined, starts it: one execution per decision that committed.
    const automation = unwrap(
      await admin.POST("/api/v1/automations", {
        body: {
          automation: {
            displayName: "Chaos: every decision",
            isDraft: false,
            enabled: true,
            triggers: [{ fundEvents: { eventTypes: ["FUND_EVENT_TYPE_SPEND_AUTHORIZED", "FUND_EVENT_TYPE_SPEND_DECLINED"] } }],
            automationSteps: [{ stepName: "read", evaluateExpressions: { expressions: [{ name: "id", expression: "ctx.trigger.authorization.id" }] } }],
          },
        },
      }),
    ).automation.id!;
    const traffic = new SpendTraffic(o, userId, appIds, automation);
    traffic.workers = Array.from({ length: o.spenders }, (_, s) => traffic.spender(s));
    return traffic;
  }

  /** Sends until an answer arrives (same key, same body), round robin over the instances; a key in use is retried after a second. */
  private async settle(what: string, send: (client: ApiClient) => Promise<Answer>, first: number): Promise<Answer> {
    const deadline = Date.now() + SETTLE_MS;
    for (let attempt = first; ; attempt++) {
      if (Date.now() > deadline) throw new Error(`${what}: no answer within ${SETTLE_MS} ms`);
      let answer: Answer;
      try {
        answer = await send(this.client(attempt));
      } catch {
        this.unknownAnswers++;
        await sleep(100);
        continue;
      }
      const reason = answer.response.status >= 400 ? errorReason(answer.error) : undefined;
      // The spend operations take no claim on their keys (src/http/idempotency.ts): an attempt cut
      // by a kill leaves nothing held, so a resent request runs or replays, never waits.
      if (reason === "IDEMPOTENCY_KEY_IN_USE") {
        this.refused.push(`${what}: 409 IDEMPOTENCY_KEY_IN_USE after a kill`);
        await sleep(1000);
        continue;
      }
      if (answer.response.status >= 500) {
        this.refused.push(`${what}: ${answer.response.status} ${JSON.stringify(answer.error)}`);
        await sleep(200);
        continue;
      }
      return answer;
    }
  }

  /**
   * Starts one spend after another; a spend whose requests are still being resent (its server was
   * killed) goes on in the background
   * after 1.5 s, so that the traffic keeps flowing.
   */
  private async spender(s: number): Promise<void> {
    for (let n = 0; this.loading; n++) {
      const spend = this.spend(s + n);
      this.spends.push(spend);
      await Promise.race([spend, sleep(1500)]);
    }
  }

  /** One authorization and what follows it: a capture (whole or part), a release or nothing; then maybe a reversal (whole or half). */
  private async spend(first: number): Promise<void> {
    // Every choice drawn now, so that the spends resent in the background do not reorder the draws.
    const rng = this.o.random;
    const [kind, app, size, next, reverse, half] = [rng(), rng(), rng(), rng(), rng(), rng()];
    const key = randomUUID();
    this.keys.add(key);
    const short = kind >= 0.33 && kind < 0.53;
    const body = {
      userId: this.userId,
      appId: this.appIds[Math.floor(app * APPS)]!,
      amount: usd(size < 0.8 ? NANOS : NANOS / 2n),
      // A third direct spends, a fifth short holds that expire while the traffic runs.
      ...(kind < 0.33 ? { capture: true } : { holdSeconds: short ? 2 : 3600 }),
      metadata: { key },
    };
    const answer = await this.settle(`authorize ${key}`, (c) => c.POST("/api/v1/funds/spend-authorizations", { params: { header: { "Idempotency-Key": key } }, body }), first);
    if (answer.response.status !== 200) {
      this.refused.push(`authorize ${key}: ${answer.response.status} ${JSON.stringify(answer.error)}`);
      return;
    }
    const a = (answer.data as { authorization: Authorization }).authorization;
    if (!a.decision.approved) {
      this.declined.push(a);
      return;
    }
    const known: Known = { key, authorization: a, reversed: 0n, ...(a.state === "SPEND_AUTHORIZATION_STATE_CAPTURED" ? { final: { state: a.state, captured: nanosOf(a.amount) } } : {}) };
    this.known.set(a.id, known);
    const path = { params: { path: { authorization_id: a.id }, header: { "Idempotency-Key": randomUUID() } } };
    if (a.state === "SPEND_AUTHORIZATION_STATE_PENDING" && next < 0.75) {
      const release = next < 0.3;
      const part = next > 0.6 ? (a.amount.units === "1" ? NANOS / 4n : NANOS / 10n) : undefined;
      const what = `${release ? "release" : "capture"} ${a.id}`;
      const follow = await this.settle(what, (c) => (release ? c.POST("/api/v1/funds/spend-authorizations/{authorization_id}/release", { ...path, body: {} }) : c.POST("/api/v1/funds/spend-authorizations/{authorization_id}/capture", { ...path, body: part ? { amount: usd(part) } : {} })), first);
      if (follow.response.status === 200) {
        const after = (follow.data as { authorization: Authorization }).authorization;
        known.final = { state: after.state, captured: nanosOf(after.capturedAmount) };
      } else if (!(follow.response.status === 409 && errorReason(follow.error) === "AUTHORIZATION_NOT_PENDING" && short)) {
        // Only a short hold may have expired before its capture or release.
        this.refused.push(`${what}: ${follow.response.status} ${JSON.stringify(follow.error)}`);
      }
    }
    if (known.final?.state === "SPEND_AUTHORIZATION_STATE_CAPTURED" && reverse < 0.5) {
      const part = half < 0.5 ? known.final.captured / 2n : undefined;
      // One key for every attempt: a reversal whose answer was lost with its server is replayed, not run again.
      const reversal = { params: { path: { authorization_id: a.id }, header: { "Idempotency-Key": randomUUID() } }, body: part ? { amount: usd(part) } : {} };
      const answered = await this.settle(`reverse ${a.id}`, (c) => c.POST("/api/v1/funds/spend-authorizations/{authorization_id}/reverse", reversal), first);
      if (answered.response.status === 200) known.reversed += part ?? known.final.captured;
      else this.refused.push(`reverse ${a.id}: ${answered.response.status} ${JSON.stringify(answered.error)}`);
    }
  }

  /** Stops sending new requests and waits until every request sent is answered. */
  async stop(): Promise<void> {
    this.loading = false;
    await Promise.all(this.workers);
    await Promise.all(this.spends);
  }

  get summary(): string {
    return `${this.keys.size} spend keys, ${this.known.size} approved, ${this.declined.length} declined, ${this.unknownAnswers} unknown answers resent`;
  }

  /** The checks of the file's header, `counts` counting one case per key. */
  async verify(dialect: "sqlite" | "postgres", databaseUrl: string, counts: Counter): Promise<void> {
    // Past the expiry of every short hold, so that the answers and the sums below see one state.
    await sleep(2100);
    const admin = this.client(0);
    const all: Authorization[] = [];
    for (const appId of this.appIds) {
      let page_token = "";
      do {
        const page = unwrap(await admin.GET("/api/v1/funds/spend-authorizations", { params: { query: { user_id: this.userId, app_id: appId, page_size: 100, ...(page_token ? { page_token } : {}) } } }));
        all.push(...page.list.map((v) => v.authorization));
        page_token = page.nextPageToken;
      } while (page_token);
    }
    // Refusals first: a retry answered otherwise than its first attempt (e.g. NOTHING_TO_REVERSE) says it ran twice.
    const failures: string[] = [...this.refused];
    // Each key made one authorization, and only keys the callers sent made any.
    const byKey = new Map<string, Authorization[]>();
    for (const a of all) byKey.set(a.metadata.key ?? "", [...(byKey.get(a.metadata.key ?? "") ?? []), a]);
    for (const key of this.keys) {
      const made = byKey.get(key)?.length ?? 0;
      counts.add(1, made === 1 ? 1 : 0);
      if (made !== 1) failures.push(`key ${key}: ${made} authorizations`);
    }
    for (const key of byKey.keys()) if (!this.keys.has(key)) failures.push(`an authorization with unknown key ${key}`);
    const byId = new Map(all.map((a) => [a.id, a]));
    for (const [id, k] of this.known) {
      const a = byId.get(id);
      if (!a) {
        failures.push(`approved ${id} (answered to a caller) does not exist`);
        continue;
      }
      const expected = { id, amount: k.authorization.amount, decision: k.authorization.decision, createdAt: k.authorization.createdAt };
      if (JSON.stringify({ id: a.id, amount: a.amount, decision: a.decision, createdAt: a.createdAt }) !== JSON.stringify(expected)) failures.push(`${id} differs from its answer: ${JSON.stringify(a)}`);
      if (k.final && (a.state !== k.final.state || nanosOf(a.capturedAmount) !== k.final.captured)) failures.push(`${id}: answered ${JSON.stringify(k.final)}, now ${a.state} captured ${a.capturedAmount.units}.${a.capturedAmount.nanos}`);
      if (nanosOf(a.reversedAmount) !== k.reversed) failures.push(`${id}: reversals answered ${k.reversed} nanos, reversedAmount ${JSON.stringify(a.reversedAmount)}`);
    }
    // No decision over the limit, none declined that fitted.
    for (const a of all) {
      const u = a.decision.usage;
      const used = nanosOf(u.spent) + nanosOf(u.held);
      if (a.decision.approved ? used > LIMIT : used + nanosOf(a.amount) <= LIMIT || a.decision.cause !== "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED") failures.push(`${a.id} decided ${a.decision.approved ? "approved" : "declined"} at ${JSON.stringify(u)}`);
    }
    // The ledger, read from the database, against the API: per authorization and per window.
    const ledger = await readLedger(dialect, databaseUrl, this.userId);
    // Per authorization: spent = CAPTURE - REVERSAL; what a hold still holds = HOLD - RELEASE - CAPTURE
    // (a direct spend has no HOLD), which stays the amount of a pending or expired hold (expiry writes no entry).
    const sums = new Map<string, Record<string, bigint>>();
    for (const e of ledger) {
      const of = sums.get(e.authorization_id) ?? {};
      of[e.kind] = (of[e.kind] ?? 0n) + BigInt(e.amount_nanos);
      sums.set(e.authorization_id, of);
    }
    const windows = new Map<string, { spent: bigint; held: bigint; ledgerSpent: bigint; ledgerHeld: bigint }>();
    for (const a of all) {
      const e = sums.get(a.id) ?? {};
      const [hold, capture, release, reversal] = [e.HOLD ?? 0n, e.CAPTURE ?? 0n, e.RELEASE ?? 0n, e.REVERSAL ?? 0n];
      const spent = nanosOf(a.capturedAmount) - nanosOf(a.reversedAmount);
      const holding = hold > 0n ? hold - release - capture : 0n;
      const pending = a.state === "SPEND_AUTHORIZATION_STATE_PENDING" || a.state === "SPEND_AUTHORIZATION_STATE_EXPIRED";
      if (capture - reversal !== spent) failures.push(`${a.id}: ledger captured - reversed ${capture - reversal}, API ${spent}`);
      if (holding !== (pending ? nanosOf(a.amount) : 0n)) failures.push(`${a.id} (${a.state}): the ledger still holds ${holding}`);
      if (!a.decision.approved && hold + capture + release + reversal !== 0n) failures.push(`declined ${a.id} has ledger entries`);
      const w = windows.get(`${a.appId} ${a.windowStart} ${a.windowEnd}`) ?? { spent: 0n, held: 0n, ledgerSpent: 0n, ledgerHeld: 0n };
      w.spent += spent;
      w.ledgerSpent += capture - reversal;
      if (a.state === "SPEND_AUTHORIZATION_STATE_PENDING") {
        w.held += nanosOf(a.amount);
        w.ledgerHeld += holding;
      }
      windows.set(`${a.appId} ${a.windowStart} ${a.windowEnd}`, w);
    }
    for (const appId of this.appIds) {
      const { usage } = unwrap(await admin.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/effective", { params: { path: { user_id: this.userId, app_id: appId } } })).effective;
      const w = windows.get(`${appId} ${usage.windowStart} ${usage.windowEnd}`) ?? { spent: 0n, held: 0n, ledgerSpent: 0n, ledgerHeld: 0n };
      const reported = { spent: nanosOf(usage.spent), held: nanosOf(usage.held) };
      if (reported.spent !== w.ledgerSpent || reported.spent !== w.spent || reported.held !== w.held || reported.held !== w.ledgerHeld) {
        failures.push(`${appId}: GetEffective ${JSON.stringify(usage)}; authorizations spent ${w.spent} held ${w.held}; ledger spent ${w.ledgerSpent} held ${w.ledgerHeld}`);
      }
      if (reported.spent + reported.held > LIMIT) failures.push(`${appId}: usage over the limit: ${JSON.stringify(usage)}`);
    }
    // Fund events: one execution per decision that exists, none for one that does not.
    const started = new Map<string, number>();
    let page_token = "";
    do {
      const page = unwrap(await admin.GET("/api/v1/automation_executions", { params: { query: { automation_id: this.fundAutomationId, page_size: 100, ...(page_token ? { page_token } : {}) } } }));
      for (const { automationExecution: e } of page.list) {
        const id = (e.context.trigger as { authorization?: { id?: string } } | undefined)?.authorization?.id ?? "";
        started.set(id, (started.get(id) ?? 0) + 1);
      }
      page_token = page.nextPageToken;
    } while (page_token);
    for (const a of all) {
      const n = started.get(a.id) ?? 0;
      counts.add(1, n === 1 ? 1 : 0);
      if (n !== 1) failures.push(`${a.id}: ${n} executions of its fund event`);
    }
    for (const id of started.keys()) if (!byId.has(id)) failures.push(`an execution of a fund event of ${id}, a decision that does not exist`);
    expect(failures).toEqual([]);
    expect(this.known.size, "some spends approved").toBeGreaterThan(0);
    expect(this.declined.length, "some spends declined: the limits bound").toBeGreaterThan(0);
  }
}

interface LedgerEntry {
  authorization_id: string;
  kind: string;
  amount_nanos: string;
}

/** The spend ledger of the subject, straight from the database (amounts as decimal strings). */
async function readLedger(dialect: "sqlite" | "postgres", url: string, userId: string): Promise<LedgerEntry[]> {
  const query = "select authorization_id, kind, cast(amount_nanos as text) as amount_nanos from spend_ledger where user_id = $1";
  if (dialect === "postgres") {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<LedgerEntry>(query, [userId])).rows;
    } finally {
      await client.end();
    }
  }
  const file = new SQLite(url.slice("sqlite:".length), { readonly: true });
  try {
    return file.prepare(query.replace("$1", "?")).all(userId) as LedgerEntry[];
  } finally {
    file.close();
  }
}
