// The load generator: a child process of its own (forked by bench/processes.ts), so that building
// requests, signing them and reading answers never shares an event loop with the orchestrator or
// the server. It receives scenarios over IPC, runs autocannon against each (a discarded warm-up
// run, then the measured run), and answers the figures.
//
// autocannon keeps latencies in an HDR histogram of whole milliseconds; answers on loopback take
// well under one, so each answer is also recorded here in an HDR histogram of microseconds.
import { createHash, createPrivateKey, randomInt, randomUUID, sign, type KeyObject } from "node:crypto";
import autocannon from "autocannon";
import * as hdr from "hdr-histogram-js";
import { hmacHeaders } from "./api.js";
import type { DriverAnswer, DriverMessage, LoadResult, LoadSpec, RequestSpec } from "./load.js";
import { cpuSeconds, cpuSecondsOf, cpuSecondsSince, machineCpu } from "./proc.js";
import { readStatements, resetStatements } from "./statements.js";

type AcRequest = Omit<autocannon.Request, "setupRequest"> & { setupRequest?: (req: autocannon.Request) => autocannon.Request };

const b64url = (s: string | Buffer): string => Buffer.from(s).toString("base64url");
const unix = (): number => Math.floor(Date.now() / 1000);

/** Signs a compact JWS synchronously (node:crypto), so it can run inside autocannon's synchronous hook. */
function jwtSigner(spec: Extract<RequestSpec, { kind: "jwt" }>): (eventId: string) => string {
  const key: KeyObject = createPrivateKey({ key: spec.privateJwk, format: "jwk" });
  const header = b64url(JSON.stringify({ alg: spec.alg, kid: spec.kid, typ: "JWT" }));
  const htb = createHash("sha256").update(spec.body).digest("base64url");
  return (eventId) => {
    const now = unix();
    const payload = b64url(JSON.stringify({ sub: spec.subject, aud: spec.audience, jti: eventId, iat: now, exp: now + 300, htm: "POST", htb_s256: htb }));
    const input = Buffer.from(`${header}.${payload}`);
    const signature = spec.alg === "ES256" ? sign("sha256", input, { key, dsaEncoding: "ieee-p1363" }) : sign(null, input, key);
    return `${header}.${payload}.${signature.toString("base64url")}`;
  };
}

interface Built {
  request: AcRequest;
  tokens?: { pregenerated: number; signedDuringRun: () => number };
}

/** The autocannon request for a scenario; its setupRequest hook makes each request fresh where needed. */
function buildRequest(spec: RequestSpec): Built {
  switch (spec.kind) {
    case "fixed":
      return { request: { method: spec.method, path: spec.path, headers: spec.headers, ...(spec.body !== undefined ? { body: spec.body } : {}) } };
    case "varying": {
      let n = 0;
      const fill = (template: string, k: number) => template.replaceAll("{k}", String(k)).replaceAll("{r}", () => String(randomInt(1, 1_000_001)));
      return {
        request: {
          method: spec.method,
          path: spec.path,
          headers: spec.headers,
          setupRequest: (req) => {
            const k = n++ % spec.keys;
            req.path = fill(spec.path, k);
            if (spec.body !== undefined) req.body = fill(spec.body, k);
            if (spec.freshIdempotencyKey) req.headers = { ...spec.headers, "Idempotency-Key": randomUUID() };
            return req;
          },
        },
      };
    }
    case "each": {
      let n = 0;
      return {
        request: {
          method: spec.method,
          path: spec.path,
          headers: spec.headers,
          ...(spec.body !== undefined ? { body: spec.body } : {}),
          setupRequest: (req) => {
            req.path = spec.path.replace("{id}", spec.ids[n++ % spec.ids.length] ?? "");
            return req;
          },
        },
      };
    }
    case "hmac": {
      return {
        request: {
          method: "POST",
          path: spec.path,
          body: spec.body,
          setupRequest: (req) => {
            req.headers = hmacHeaders(spec.secret, randomUUID(), spec.body);
            return req;
          },
        },
      };
    }
    case "jwt": {
      const signToken = jwtSigner(spec);
      const pool: Array<{ eventId: string; timestamp: string; token: string }> = [];
      for (let i = 0; i < spec.pregenerate; i++) {
        const eventId = randomUUID();
        pool.push({ eventId, timestamp: String(unix()), token: signToken(eventId) });
      }
      let next = 0;
      let live = 0;
      return {
        tokens: { pregenerated: pool.length, signedDuringRun: () => live },
        request: {
          method: "POST",
          path: spec.path,
          body: spec.body,
          setupRequest: (req) => {
            let item = pool[next++];
            if (!item) {
              live++;
              const eventId = randomUUID();
              item = { eventId, timestamp: String(unix()), token: signToken(eventId) };
            }
            req.headers = { "Content-Type": "application/json", "Webhook-Timestamp": item.timestamp, "Webhook-Event-Id": item.eventId, Authorization: `Bearer ${item.token}` };
            return req;
          },
        },
      };
    }
  }
}

function cannon(spec: LoadSpec, request: AcRequest, seconds: number, onLatency?: (ms: number) => void): Promise<autocannon.Result> {
  // Called without a callback, autocannon answers its tracker: an event emitter that is also a promise.
  const instance = autocannon({ url: spec.origin, connections: spec.connections, duration: seconds, requests: [request as autocannon.Request], timeout: 10, ...(spec.rate ? { overallRate: spec.rate } : {}) }) as unknown as autocannon.Instance & Promise<autocannon.Result>;
  if (onLatency) instance.on("response", (_client: unknown, _status: number, _bytes: number, ms: number) => onLatency(ms));
  return instance;
}

export async function runLoad(spec: LoadSpec, requestSpec: RequestSpec): Promise<LoadResult> {
  const built = buildRequest(requestSpec);
  if (spec.warmupSeconds > 0) await cannon(spec, built.request, spec.warmupSeconds);
  if (spec.statements) await resetStatements(spec.statements);
  const micros = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
  const serverBefore = cpuSeconds(spec.serverPid);
  const databaseBefore = cpuSecondsOf("postgres");
  const machineBefore = machineCpu();
  const wallBefore = performance.now();
  const ownBefore = process.cpuUsage();
  const result = await cannon(spec, built.request, spec.durationSeconds, (ms) => micros.recordValue(Math.max(1, Math.round(ms * 1000))));
  const own = process.cpuUsage(ownBefore);
  const serverSeconds = cpuSeconds(spec.serverPid) - serverBefore;
  const machineAfter = machineCpu();
  const databaseSeconds = cpuSecondsSince(databaseBefore, cpuSecondsOf("postgres"));
  const wallSeconds = (performance.now() - wallBefore) / 1000;
  const ownSeconds = (own.user + own.system) / 1e6;
  const otherSeconds = machineAfter.busy - machineBefore.busy - serverSeconds - ownSeconds - databaseSeconds;
  const statuses: Record<string, number> = {};
  for (const [code, { count }] of Object.entries((result as unknown as { statusCodeStats: Record<string, { count: number }> }).statusCodeStats ?? {})) statuses[code] = count;
  const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
  const ms = (v: number) => v / 1000;
  const out: LoadResult = {
    requestsPerSecond: result.duration > 0 ? answered / result.duration : 0,
    total: answered,
    durationSeconds: result.duration,
    latencyMs: {
      p50: ms(micros.getValueAtPercentile(50)),
      p99: ms(micros.getValueAtPercentile(99)),
      p99_9: ms(micros.getValueAtPercentile(99.9)),
      max: ms(micros.maxValue),
      mean: ms(micros.mean),
    },
    errors: { unexpectedStatus: answered - (statuses[String(spec.expectStatus)] ?? 0), socket: result.errors, timeouts: result.timeouts },
    statuses,
    cpu: {
      serverMicrosPerRequest: answered > 0 ? (serverSeconds * 1e6) / answered : Number.NaN,
      serverCores: result.duration > 0 ? serverSeconds / result.duration : Number.NaN,
      loadGeneratorMicrosPerRequest: answered > 0 ? (ownSeconds * 1e6) / answered : Number.NaN,
      databaseMicrosPerRequest: answered > 0 ? (databaseSeconds * 1e6) / answered : Number.NaN,
      // Ticks of 10 ms on either side: a few answers' worth below zero is rounding, not a measure.
      otherMicrosPerRequest: answered > 0 ? (Math.max(0, otherSeconds) * 1e6) / answered : Number.NaN,
      idleCores: (machineAfter.idle - machineBefore.idle) / wallSeconds,
    },
  };
  if (spec.statements) out.statements = await readStatements(spec.statements, answered);
  if (built.tokens) out.tokens = { pregenerated: built.tokens.pregenerated, signedDuringRun: built.tokens.signedDuringRun() };
  return out;
}

// Forked by the orchestrator: one scenario at a time, each answered with the id it came with.
if (process.send) {
  let queue = Promise.resolve();
  process.on("message", (message: DriverMessage) => {
    queue = queue.then(async () => {
      let answer: DriverAnswer;
      try {
        answer = { id: message.id, ok: true, result: await runLoad(message.spec, message.request) };
      } catch (e) {
        answer = { id: message.id, ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) };
      }
      process.send!(answer);
    });
  });
  process.on("disconnect", () => process.exit(0));
}
