// Shared by the webhook and automation HTTP tests: raw intake requests over node:http (so that every
// header, the exact body bytes, chunked transfer and the address connected to are the test's
// choice), automations set up through the typed client, a JWKS served over real HTTP on 127.0.0.1,
// and waiting for executions. Every intake answer is checked against the contract here, as the
// typed client's answers are by the harness.
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import { expect } from "vitest";
import { paginate, unwrap, type ApiClient, type components } from "../../../src/client/index.js";
import { bodyHash, hmacSignature } from "../../../src/client/webhook-sender.js";
import { responseErrors } from "../../support/contract.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { webhookTrigger } from "../../support/triggers.js";

export type Schemas = components["schemas"];
export type Step = Schemas["AutomationStep"];
export type Automation = Schemas["Automation"];
export type Execution = Schemas["AutomationExecution"];

export const RECEIVE = "svc.api.webhooks.v1.IncomingWebhookService.Receive";

export interface Answer {
  status: number;
  body: any;
  headers: http.IncomingHttpHeaders;
}

export interface RawRequest {
  /** Sent as given; a header whose value is undefined is not sent. */
  headers?: Record<string, string | undefined>;
  body?: string | Buffer;
  /** Chunked transfer encoding, no Content-Length: the body goes in pieces of `chunkSize`. */
  chunked?: boolean;
  chunkSize?: number;
  /** Connect to this address instead of the URL's host (e.g. "::1", "::ffff:127.0.0.1"). */
  connectTo?: string;
  /** The intake operation whose contract the answer is checked against; default `Receive`. */
  operationId?: string;
}

/**
 * POSTs to `url` over a fresh connection and answers the status and the parsed body, checked against
 * the contract of the intake. Errors after the answer arrived (the server closing a connection whose
 * body it refused to read) are ignored.
 */
export function postRaw(url: string, request: RawRequest = {}): Promise<Answer> {
  const target = new URL(url);
  const body = typeof request.body === "string" ? Buffer.from(request.body, "utf8") : (request.body ?? Buffer.alloc(0));
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers ?? {})) if (value !== undefined) headers[name] = value;
  if (!request.chunked) headers["Content-Length"] = String(body.length);
  return new Promise<Answer>((resolve, reject) => {
    let answered = false;
    const req = http.request(
      {
        host: request.connectTo ?? target.hostname.replace(/^\[|\]$/g, ""),
        port: Number(target.port),
        path: target.pathname + target.search,
        method: "POST",
        headers,
        agent: false,
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", () => undefined);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = text;
          }
          const status = res.statusCode ?? 0;
          expect(responseErrors(request.operationId ?? RECEIVE, status, parsed), `intake answered ${status} ${text.slice(0, 300)}`).toEqual([]);
          resolve({ status, body: parsed, headers: res.headers });
        });
      },
    );
    req.on("error", (e) => {
      if (!answered) reject(e);
    });
    if (request.chunked) {
      const size = request.chunkSize ?? 4096;
      for (let at = 0; at < body.length; at += size) req.write(body.subarray(at, at + size));
      req.end();
    } else {
      req.end(body);
    }
  });
}

/** `ErrorInfo` of an error body: its reason and metadata. */
export function errorInfo(body: any): { reason?: string; metadata?: Record<string, string> } {
  const details: any[] = Array.isArray(body?.details) ? body.details : [];
  return details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo") ?? {};
}

/** Asserts an intake failure: this status and, when given, this reason. */
export function expectRefused(answer: Answer, status: number, reason?: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expect(answer.body).toMatchObject({ code: expect.any(Number), message: expect.any(String) });
  if (reason !== undefined) expect(errorInfo(answer.body).reason).toBe(reason);
}

/** Asserts an accepted event (200) and returns it. */
export function expectAccepted(answer: Answer): Schemas["WebhookEvent"] {
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.webhookEvent as Schemas["WebhookEvent"];
}

export const newEventId = (): string => randomUUID();

/** Unix seconds of the server's clock, plus `offsetSeconds`, as the header carries them. */
export const unixTime = (ts: TestServer, offsetSeconds = 0): string => String(Math.floor(ts.clock.now() / 1000) + offsetSeconds);

export interface Delivery {
  eventId?: string;
  timestamp?: string;
  /** Replace or remove (undefined) any header of the signed request. */
  headers?: Record<string, string | undefined>;
  chunked?: boolean;
  connectTo?: string;
}

/** The headers of a correctly signed HMAC request. */
export function hmacHeaders(secret: string, body: string | Buffer, timestamp: string, eventId: string): Record<string, string> {
  return {
    "Content-Type": "application/json",
    "Webhook-Timestamp": timestamp,
    "Webhook-Event-Id": eventId,
    "Webhook-Signature": hmacSignature(secret, timestamp, eventId, body),
  };
}

/** Posts `body` to `url`, signed with `secret` at the server's time (overrides applied after signing). */
export function sendHmac(ts: TestServer, url: string, secret: string, body: string | Buffer = '{"hello":"world"}', delivery: Delivery = {}): Promise<Answer> {
  const eventId = delivery.eventId ?? newEventId();
  const timestamp = delivery.timestamp ?? unixTime(ts);
  return postRaw(url, {
    headers: { ...hmacHeaders(secret, body, timestamp, eventId), ...delivery.headers },
    body,
    ...(delivery.chunked ? { chunked: true } : {}),
    ...(delivery.connectTo ? { connectTo: delivery.connectTo } : {}),
  });
}

/** Calls of the automation operations, by name, for one client. Bodies are `unknown` so tests can send bad ones. */
export function automationsApi(client: ApiClient) {
  const id = (value: string) => ({ params: { path: { id: value } } });
  return {
    create: (automation: unknown) => client.POST("/api/v1/automations", { body: { automation } as never }),
    get: (value: string) => client.GET("/api/v1/automations/{id}", id(value)),
    update: (value: string, automation: unknown, updateMask: string) =>
      client.POST("/api/v1/automations/{id}", { ...id(value), body: { automation, updateMask } as never }),
    delete: (value: string) => client.DELETE("/api/v1/automations/{id}", id(value)),
    list: (query: { page_size?: number; page_token?: string } = {}) => client.GET("/api/v1/automations", { params: { query } }),
    rotate: (value: string, body: unknown = {}) => client.POST("/api/v1/automations/{id}/webhook-secret", { ...id(value), body: body as never }),
    check: (body: unknown) => client.POST("/api/v1/automation-steps/check", { body: body as never }),
    events: (value: string, query: { page_size?: number; page_token?: string } = {}) =>
      client.GET("/api/v1/automations/{id}/webhook-events", { params: { path: { id: value }, query } }),
    executions: (query: { automation_id?: string; page_size?: number; page_token?: string } = {}) =>
      client.GET("/api/v1/automation_executions", { params: { query } }),
    execution: (value: string) => client.GET("/api/v1/automation_executions/{id}", id(value)),
    redrive: (value: string, key?: string) => client.POST("/api/v1/automation_executions/{id}/redrive", { ...id(value), body: {}, headers: key ? { "Idempotency-Key": key } : {} }),
    replay: (value: string, eventId: string, key?: string) =>
      client.POST("/api/v1/automations/{id}/webhook-events/{event_id}/replay", {
        params: { path: { id: value, event_id: eventId } },
        body: {},
        headers: key ? { "Idempotency-Key": key } : {},
      }),
  };
}

export type AutomationsApi = ReturnType<typeof automationsApi>;

/** A test server and the super admin's automation calls, for one test file. */
export async function startAutomationsServer(): Promise<{ ts: TestServer; api: AutomationsApi }> {
  const ts = await startTestServer();
  return { ts, api: automationsApi(ts.admin) };
}

export interface Hooked {
  automation: Automation;
  id: string;
  listenerId: string;
  url: string;
  /** The listener's secret as answered (empty for a JWT listener, or a Standard Webhooks one with a public key). */
  secret: string;
}

export interface HookOptions {
  steps?: Step[];
  isDraft?: boolean;
  enabled?: boolean;
  cidrs?: string[];
  /** A JWT listener with this JWKS URL instead of HMAC. */
  jwksUrl?: string;
  /** The trigger's kind arm as sent (`{ github: {} }`...), instead of HMAC. */
  kind?: Record<string, unknown>;
  displayName?: string;
}

let created = 0;

/** Creates an automation with a webhook trigger (published and enabled unless told otherwise). */
export async function createHooked(ts: TestServer, options: HookOptions = {}): Promise<Hooked> {
  const webhook = options.kind ?? (options.jwksUrl ? { jwt: { jwksUrl: options.jwksUrl } } : { hmac: {} });
  const saved = unwrap(
    await automationsApi(ts.admin).create({
      displayName: options.displayName ?? `Automation ${++created}`,
      isDraft: options.isDraft ?? false,
      enabled: options.enabled ?? true,
      triggers: [{ webhook: { ...webhook, ...(options.cidrs ? { allowedSourceCidrs: options.cidrs } : {}) } }],
      automationSteps: options.steps ?? [],
    }),
  );
  const trigger = webhookTrigger(saved.automation);
  expect(trigger?.listenerId).toBeTruthy();
  return { automation: saved.automation, id: saved.automation.id!, listenerId: trigger!.listenerId!, url: trigger!.url!, secret: saved.webhookSecret ?? "" };
}

/** Every execution of an automation, walking all pages. */
export async function executionsOf(client: ApiClient, automationId: string): Promise<Execution[]> {
  const api = automationsApi(client);
  const out: Execution[] = [];
  for await (const item of paginate((page_token) => api.executions({ automation_id: automationId, page_token }).then(unwrap))) out.push(item.automationExecution);
  return out;
}

/** Every entry of an automation's delivery log. */
export async function eventsOf(client: ApiClient, automationId: string): Promise<Schemas["WebhookEvent"][]> {
  const api = automationsApi(client);
  const out: Schemas["WebhookEvent"][] = [];
  for await (const item of paginate((page_token) => api.events(automationId, { page_token }).then(unwrap))) out.push(item.webhookEvent);
  return out;
}

/** The execution once the worker has nothing left to run. */
export async function settled(ts: TestServer, executionId: string): Promise<Execution> {
  await ts.server.worker.idle();
  return unwrap(await automationsApi(ts.admin).execution(executionId)).automationExecution;
}

/**
 * Runs the execution to its end: each time it parks, the test's clock moves to its next attempt and
 * the worker is told. Answers the end and what it showed each time it was parked.
 */
export async function finished(ts: TestServer, executionId: string, maxParks = 20): Promise<{ execution: Execution; parked: Execution[] }> {
  const parked: Execution[] = [];
  for (;;) {
    const execution = await settled(ts, executionId);
    if (execution.state !== "AUTOMATION_EXECUTION_STATE_PARKED") return { execution, parked };
    if (parked.length === maxParks) throw new Error(`execution ${executionId} parked ${maxParks} times`);
    parked.push(execution);
    ts.clock.set(Math.max(ts.clock.now(), Date.parse(execution.nextAttemptAt!)));
    ts.server.worker.notify();
  }
}

/** A step as answers show it: the kinds it does not set null, no skip expression "". */
export const shownStep = (step: Step): Step => ({ skipIfTrueCel: "", evaluateExpressions: null, suspendAppLimit: null, unsuspendAppLimit: null, setAppLimitExtension: null, ...step }) as Step;

/** A one-step automation computing named CEL expressions. */
export const evaluateStep = (stepName: string, expressions: Record<string, string>, skipIfTrueCel?: string): Step => ({
  stepName,
  ...(skipIfTrueCel ? { skipIfTrueCel } : {}),
  evaluateExpressions: { expressions: Object.entries(expressions).map(([name, expression]) => ({ name, expression })) },
});

// ---- JWT senders ------------------------------------------------------------------------------

export type Alg = "RS256" | "ES256" | "EdDSA";

export interface SigningKey {
  alg: Alg;
  kid: string;
  privateKey: CryptoKey;
  privateJwk: JWK;
  publicJwk: JWK;
}

export async function signingKey(alg: Alg, kid: string): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  return {
    alg,
    kid,
    privateKey,
    privateJwk: await exportJWK(privateKey),
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" },
  };
}

/** Signs `claims` (a claim set to undefined is left out) with `key`; header fields may be overridden. */
export async function signClaims(key: SigningKey, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  const payload = Object.fromEntries(Object.entries(claims).filter(([, v]) => v !== undefined));
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, ...header }).sign(key.privateKey);
}

/** The claims a valid webhook JWT carries for this request, at the server's time. */
export function webhookClaims(ts: TestServer, listenerUrl: string, eventId: string, body: string | Buffer): Record<string, unknown> {
  const now = Math.floor(ts.clock.now() / 1000);
  return { sub: ts.url, aud: listenerUrl, iat: now, exp: now + 300, jti: eventId, htm: "POST", htb_s256: bodyHash(body) };
}

/** A node:http server on 127.0.0.1 serving JWKS documents by path; counts requests per path. */
export class JwksHost {
  readonly documents = new Map<string, unknown>();
  readonly hits = new Map<string, number>();
  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<JwksHost> {
    let self: JwksHost | undefined;
    const server = http.createServer((req, res) => {
      const path = req.url ?? "/";
      self?.hits.set(path, (self.hits.get(path) ?? 0) + 1);
      const document = self?.documents.get(path);
      if (document === undefined) {
        res.writeHead(404, { "content-type": "application/json" }).end("{}");
        return;
      }
      const text = JSON.stringify(document);
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
    });
    self = new JwksHost(server);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return self;
  }

  /** Serves `keys` at `path` and answers its URL. */
  serve(path: string, keys: JWK[]): string {
    this.documents.set(path, { keys });
    return this.url(path);
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
