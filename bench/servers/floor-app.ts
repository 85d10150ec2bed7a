// The floor server's routes (issue 33): bare Express 5 routes with express.json(), on the server's
// own paths so that the load generator sends the floor the very requests it sends the server. Each
// checks what it must (the body's fields, the money exact in nanos, a webhook's signature), runs its
// operation on the store in one transaction or round trip, and answers a small fixed-shape JSON body.
import type { IncomingMessage } from "node:http";
import express, { type Request, type Response } from "express";
import { timeOrderedId } from "../../src/core/ids.js";
import { verifiedEventId } from "./floor-hmac.js";
import { monthStart, type FloorStore } from "./floor-store.js";

/** As the server's (src/funds/spends/spend-authorizations.ts). */
const HOLD_SECONDS = 600;
const NANOS = 1_000_000_000n;

/** The amount in nanos of a Money of `{ currencyCode, units, nanos }`, or undefined when it is not a positive one. */
function amountNanos(amount: unknown): { currencyCode: string; nanos: bigint } | undefined {
  if (typeof amount !== "object" || amount === null) return undefined;
  const { currencyCode, units, nanos } = amount as Record<string, unknown>;
  if (typeof currencyCode !== "string" || typeof units !== "string" || !/^\d{1,19}$/.test(units)) return undefined;
  if (nanos !== undefined && (typeof nanos !== "number" || !Number.isInteger(nanos) || nanos < 0 || nanos >= 1e9)) return undefined;
  const total = BigInt(units) * NANOS + BigInt(nanos ?? 0);
  return total > 0n ? { currencyCode, nanos: total } : undefined;
}

const refuse = (res: Response, status: number, reason: string) => void res.status(status).json({ reason });

export function floorApp(store: FloorStore): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  // The raw body is kept for the webhook's signature, which is over its bytes.
  const json = express.json({ verify: (req: IncomingMessage & { rawBody?: Buffer }, _res, buf) => void (req.rawBody = buf) });

  app.get("/", (_req, res) => void res.json({}));

  app.post("/api/v1/funds/spend-authorizations", json, async (req: Request, res: Response) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const key = req.get("Idempotency-Key");
    const amount = amountNanos(body.amount);
    if (!key || typeof body.userId !== "string" || typeof body.appId !== "string" || !amount) return refuse(res, 400, "INVALID_ARGUMENT");
    const now = Date.now();
    const decision = await store.authorize({
      key,
      id: timeOrderedId(now, 8),
      userId: body.userId,
      appId: body.appId,
      currencyCode: amount.currencyCode,
      amountNanos: amount.nanos,
      windowStart: monthStart(now),
      now: new Date(now).toISOString(),
      expiresAt: new Date(now + HOLD_SECONDS * 1000).toISOString(),
    });
    if (decision.outcome !== "decided") return decision.outcome === "key-reused" ? refuse(res, 422, "IDEMPOTENCY_KEY_REUSED") : refuse(res, 400, "CURRENCY_MISMATCH");
    res.json({ id: decision.id, approved: decision.approved });
  });

  app.post("/api/v1/funds/spend-authorizations/:id/capture", json, async (req: Request<{ id: string }>, res: Response) => {
    const now = Date.now();
    const outcome = await store.capture(req.params.id, timeOrderedId(now, 8), new Date(now).toISOString());
    if (outcome === "not-found") return refuse(res, 404, "AUTHORIZATION_NOT_FOUND");
    if (outcome === "not-pending") return refuse(res, 400, "AUTHORIZATION_NOT_PENDING");
    res.json({ id: req.params.id, state: "CAPTURED" });
  });

  // Listeners are kept once read, as the server keeps them.
  const listeners = new Map<string, { listenerId: string; secret: string }>();
  app.post("/api/v1/webhooks/incoming/:listenerId", json, async (req: Request & { rawBody?: Buffer }, res: Response) => {
    const listener = listeners.get(req.path) ?? (await store.listener(req.path));
    if (!listener) return refuse(res, 404, "LISTENER_NOT_FOUND");
    listeners.set(req.path, listener);
    const now = Date.now();
    const eventId = verifiedEventId({ timestamp: req.get("Webhook-Timestamp"), eventId: req.get("Webhook-Event-Id"), signature: req.get("Webhook-Signature") }, req.rawBody ?? Buffer.alloc(0), listener.secret, Math.floor(now / 1000));
    if (!eventId) return refuse(res, 401, "INVALID_SIGNATURE");
    const accepted = await store.intake({ listenerId: listener.listenerId, eventId, executionId: timeOrderedId(now, 8), body: (req.rawBody ?? Buffer.alloc(0)).toString("utf8"), now: new Date(now).toISOString() });
    if (!accepted) return refuse(res, 409, "DUPLICATE_EVENT");
    res.json({ accepted: true });
  });

  return app;
}
