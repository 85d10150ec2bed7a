// Chaos: webhook load from a client that writes down every event id answered 200, while server
// processes are killed with SIGKILL at random moments (three times) and restarted on the same
// database. An answer never received is unknown, not a failure: the client resends those until
// each is settled (200, or 409 when the first try had been recorded). Then every recorded event
// id must be in the delivery log, have exactly one execution that reached a final state, and be
// answered 409 when sent again. On SQLite (one instance) and PostgreSQL (two, one or both killed).
// Spend traffic runs alongside, through the same kills (spend-traffic.ts says what it checks).
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import SQLite from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { createScratchDatabase } from "../../scripts/scratch-database.js";
import { createApiClient, paginate, unwrap, type ApiClient } from "../../src/client/index.js";
import { sendWebhookEvent } from "../../src/client/webhook-sender.js";
import { POSTGRES_ADMIN_URL } from "../support/database.js";
import { freePort, serve, type Served } from "../support/process.js";
import { reliabilitySuite, type Counter } from "../support/reliability.js";
import { SpendTraffic } from "./spend-traffic.js";
import { seeded } from "../support/seeded.js";
import { webhookTrigger } from "../support/triggers.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const SEED = Number(process.env.CHAOS_SEED ?? 20_261_120);
const ADMIN = { clientId: "chaos-admin", clientSecret: "chaos-admin-secret-0123456789" };
const SENDERS = 6;
const SPENDERS = 3;
const KILLS = 3;
const FINAL = new Set(["AUTOMATION_EXECUTION_STATE_DONE", "AUTOMATION_EXECUTION_STATE_ERROR"]);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Cluster {
  readonly servers: Served[] = [];
  private constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly ports: number[],
  ) {}

  static async start(env: NodeJS.ProcessEnv, instances: number): Promise<Cluster> {
    const cluster = new Cluster(env, await Promise.all(Array.from({ length: instances }, () => freePort())));
    await Promise.all(cluster.ports.map((_, i) => cluster.restart(i)));
    return cluster;
  }

  url(i: number): string {
    return `http://127.0.0.1:${this.ports[i]}`;
  }

  async restart(i: number): Promise<void> {
    this.servers[i] = await serve({
      // Node itself with tsx as a loader, not the tsx command: that one is a parent process, and a
      // SIGKILL to it would leave the real server running.
      command: process.execPath,
      args: ["--import", "tsx", join(root, "src/main.ts")],
      url: this.url(i),
      probePath: "/readyz",
      env: { ...this.env, PORT: String(this.ports[i]) },
      timeoutMs: 90_000,
    });
  }

  async kill(i: number): Promise<void> {
    const { child } = this.servers[i]!;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}

type Outcome = "acknowledged" | "duplicate" | "unknown" | "refused";

interface Ledger {
  bodies: Map<string, string>;
  acknowledged: Set<string>;
  unknown: Set<string>;
  refused: string[];
}

async function deliver(url: string, path: string, secret: string, eventId: string, body: string): Promise<{ outcome: Outcome; status?: number }> {
  try {
    const sent = await sendWebhookEvent({ url: url + path, body, eventId, auth: { hmac: { secret } }, fetch: (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(20_000) }) });
    if (sent.status === 200) return { outcome: "acknowledged", status: 200 };
    if (sent.status === 409) return { outcome: "duplicate", status: 409 };
    return { outcome: "refused", status: sent.status };
  } catch {
    return { outcome: "unknown" };
  }
}

async function everything<T>(pages: (token: string) => Promise<{ list: T[]; nextPageToken: string }>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of paginate(pages)) out.push(item);
  return out;
}

async function chaos(dialect: "sqlite" | "postgres", instances: number, counts: Counter, spendCounts: Counter) {
  const rng = seeded(SEED + instances);
  const dir = mkdtempSync(join(tmpdir(), "tenant-chaos-"));
  const database = dialect === "sqlite" ? { url: `sqlite:${join(dir, "chaos.sqlite")}`, drop: async () => undefined } : await createScratchDatabase(POSTGRES_ADMIN_URL, "tenant_chaos");
  // Rate limits off: the load is one listener's, from one address, as fast as the senders go.
  const cluster = await Cluster.start(
    { DATABASE_URL: database.url, BASE_URL: "http://tenant.example.test", SECRETS_KEY: Buffer.alloc(32, 9).toString("base64url"), BOOTSTRAP_CLIENT_ID: ADMIN.clientId, BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret, LOG_LEVEL: "warn", HOST: "127.0.0.1", RATE_LIMIT: "off" },
    instances,
  );
  try {
    const admin = (i = 0): ApiClient => createApiClient({ baseUrl: cluster.url(i), credentials: ADMIN });
    const created = unwrap(
      await admin().POST("/api/v1/automations", {
        body: {
          automation: {
            displayName: "chaos",
            isDraft: false,
            enabled: true,
            triggers: [{ webhook: { hmac: {} } }],
            automationSteps: [{ stepName: "double", evaluateExpressions: { expressions: [{ name: "n", expression: "ctx.trigger.n * 2.0" }] } }],
          },
        },
      }),
    );
    const automationId = created.automation.id!;
    const path = new URL(webhookTrigger(created.automation)!.url!).pathname;
    const secret = created.webhookSecret!;

    // Load: each sender posts new events, round robin over the instances, until told to stop.
    const ledger: Ledger = { bodies: new Map(), acknowledged: new Set(), unknown: new Set(), refused: [] };
    let loading = true;
    let sequence = 0;
    const senders = Array.from({ length: SENDERS }, async (_, s) => {
      while (loading) {
        const eventId = randomUUID();
        const body = JSON.stringify({ n: ++sequence });
        ledger.bodies.set(eventId, body);
        const { outcome, status } = await deliver(cluster.url((sequence + s) % instances), path, secret, eventId, body);
        if (outcome === "acknowledged") ledger.acknowledged.add(eventId);
        else if (outcome === "unknown") {
          ledger.unknown.add(eventId);
          await sleep(50);
        } else ledger.refused.push(`${eventId}: ${status}`);
      }
    });

    // Spends through the same kills, from their own seeded generator (the kill moments stay reproducible).
    const spends = await SpendTraffic.start({ url: (i) => cluster.url(i), instances, admin: ADMIN, spenders: SPENDERS, random: seeded(SEED + 100 + instances) });

    const kills: string[] = [];
    for (let k = 0; k < KILLS; k++) {
      await sleep(500 + Math.floor(rng() * 3000));
      const pick = Math.floor(rng() * (instances === 1 ? 1 : instances + 1));
      const victims = pick === instances ? [...Array(instances).keys()] : [pick];
      kills.push(`kill ${k + 1}: instance ${victims.join("+")} after ${ledger.acknowledged.size} acknowledged`);
      await Promise.all(victims.map((i) => cluster.kill(i)));
      await Promise.all(victims.map((i) => cluster.restart(i)));
    }
    await sleep(1000);
    loading = false;
    // The spenders settle what they sent (resending until answered) while the webhook checks run.
    const spendsSettled = spends.stop();
    await Promise.all(senders);
    console.log(`chaos ${dialect} x${instances} (CHAOS_SEED=${SEED}): ${kills.join("; ")}; ${ledger.acknowledged.size} acknowledged, ${ledger.unknown.size} unknown`);
    expect(ledger.refused, "no delivery of a new event id is refused").toEqual([]);
    expect(ledger.acknowledged.size).toBeGreaterThan(0);

    // An unknown answer is settled by sending the same event again: 200 (it was lost) or 409 (recorded).
    const recorded = new Set(ledger.acknowledged);
    for (const eventId of ledger.unknown) {
      for (let attempt = 0; ; attempt++) {
        const { outcome } = await deliver(cluster.url(attempt % instances), path, secret, eventId, ledger.bodies.get(eventId)!);
        if (outcome === "acknowledged" || outcome === "duplicate") break;
        expect(attempt, `event ${eventId} could not be settled`).toBeLessThan(20);
        await sleep(200);
      }
      recorded.add(eventId);
    }

    // Every execution reaches a final state (a run cut by a kill is resumed once its lease lapses).
    let executions: { eventId?: string | null; state?: string }[] = [];
    for (let i = 0; i < 180; i++) {
      executions = await everything((page_token) => admin(i % instances).GET("/api/v1/automation_executions", { params: { query: { automation_id: automationId, page_size: 100, ...(page_token ? { page_token } : {}) } } }).then(unwrap)).then((l) => l.map((e) => e.automationExecution));
      if (executions.length >= recorded.size && executions.every((e) => FINAL.has(e.state ?? ""))) break;
      await sleep(1000);
    }
    const events = new Set((await everything((page_token) => admin().GET("/api/v1/automations/{id}/webhook-events", { params: { path: { id: automationId }, query: { page_size: 100, ...(page_token ? { page_token } : {}) } } }).then(unwrap))).map((e) => e.webhookEvent.eventId));
    const executionsOf = new Map<string, string[]>();
    for (const e of executions) executionsOf.set(e.eventId ?? "", [...(executionsOf.get(e.eventId ?? "") ?? []), e.state ?? ""]);

    // Each recorded id: in the log, one execution in a final state, and 409 when sent again.
    const failures: string[] = [];
    const ids = [...recorded];
    for (let at = 0; at < ids.length; at += 25) {
      await Promise.all(
        ids.slice(at, at + 25).map(async (eventId, j) => {
          const states = executionsOf.get(eventId) ?? [];
          const again = await deliver(cluster.url(j % instances), path, secret, eventId, ledger.bodies.get(eventId)!);
          const ok = events.has(eventId) && states.length === 1 && FINAL.has(states[0]!) && again.status === 409;
          counts.add(1, ok ? 1 : 0);
          if (!ok) failures.push(`${eventId}: logged=${events.has(eventId)} executions=${JSON.stringify(states)} resend=${again.status ?? "no answer"}`);
        }),
      );
    }
    expect(failures).toEqual([]);
    // Nothing beyond them: no execution or log entry for an event the client does not know as recorded.
    expect(executions.length).toBe(recorded.size);
    expect(events.size).toBe(recorded.size);

    await spendsSettled;
    console.log(`chaos ${dialect} x${instances} spends: ${spends.summary}`);
    await spends.verify(dialect, database.url, spendCounts);
  } finally {
    await cluster.stop();
    if (dialect === "sqlite") {
      const db = new SQLite(join(dir, "chaos.sqlite"));
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      db.close();
    }
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("webhook and spend load through SIGKILL and restart", () => {
  const sqlite = reliabilitySuite("chaos", "sqlite");
  const postgres = reliabilitySuite("chaos", "postgres, 2 instances");
  const spendSqlite = reliabilitySuite("chaos-spends", "sqlite");
  const spendPostgres = reliabilitySuite("chaos-spends", "postgres, 2 instances");
  it("on SQLite, one instance killed three times: every acknowledged event recorded and run exactly once; every answered spend exists, none over the limit, the ledger sums to the usage answered", () => chaos("sqlite", 1, sqlite, spendSqlite));
  it("on PostgreSQL, two instances, one or both killed three times: every acknowledged event recorded and run exactly once; every answered spend exists, none over the limit, the ledger sums to the usage answered", () => chaos("postgres", 2, postgres, spendPostgres));
});
