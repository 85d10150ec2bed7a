// Idempotent retries: a request of an operation whose contract declares the Idempotency-Key header runs
// once per calling user and key; the same request again within retention gets the first answer, marked
// `Idempotent-Replayed: true`. Most operations claim the key first (a record with a lease); those of
// KEPT_WITH_EFFECT run on every attempt and keep their answer in their effect's transaction. Whose keys
// they are, which answers are kept, sealed or by reference, and why: docs/partners.md, "Idempotent
// retries".
import { hash, randomUUID } from "node:crypto";
import type { Request, Response } from "express";
import { operationRoutes, type OperationId } from "../../generated/server.js";
import type { Storage } from "../storage/connect.js";
import type { Sealed } from "../storage/secrets-key.js";
import type { AnswerWrite, Db } from "../storage/transactions.js";
import type { SecretBox } from "../webhooks/secret-box.js";
import { canonicalJson } from "../core/canonical-json.js";
import { ApiError, GrpcCode } from "../core/errors.js";
import type { Origin } from "../core/origin.js";
import type { Claim, IdempotencyRecords } from "../storage/idempotency-records.js";
import type { CommitAnswer } from "./context.js";
import { publishErrorAnswer } from "./error-answers.js";
import { statusBody, type StatusBody } from "./status-body.js";
import { toApiError } from "./to-api-error.js";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
const REPLAYED_HEADER = "Idempotent-Replayed";

/** Seconds a request that found its key in use is told to wait: most requests take milliseconds. */
const RETRY_AFTER_SECONDS = 1;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * Operations whose kept answers hold no secret, kept unsealed. Any other operation's answer is
 * sealed: an operation added without thought about its answer is sealed by default.
 */
const PLAIN_ANSWERS: ReadonlySet<string> = new Set<OperationId>([
  "svc.api.funds.v1.SpendService.Authorize",
  "svc.api.funds.v1.SpendService.Capture",
  "svc.api.funds.v1.SpendService.Release",
  "svc.api.funds.v1.SpendService.Reverse",
]);

/**
 * Operations that take no claim: every attempt runs, and the first to insert the record (with its
 * 200, in its effect's transaction) wins; the others roll back and replay its answer. Their effects
 * are cheap enough to run and roll back on a lost race. Each attempt's run checks its caller (apps,
 * ownership) before any replay, so an operation whose handler decides who may act on what must be
 * one of these: a claimed operation is decided by role alone.
 */
const KEPT_WITH_EFFECT: ReadonlySet<string> = new Set<OperationId>([
  "svc.api.funds.v1.SpendService.Authorize",
  "svc.api.funds.v1.SpendService.Capture",
  "svc.api.funds.v1.SpendService.Release",
  "svc.api.funds.v1.SpendService.Reverse",
]);

/**
 * Refusals about who asks, never kept: kept, one would be replayed to another credential of the
 * user, or to the same caller once its access changed, and would block the corrected request with
 * the key (422). A 404 is among them because it cannot tell "absent" from "hidden from this caller"
 * (that is its point: another app's authorization is 404 to an app service). Not keeping one costs
 * nothing: the ids the operations look up are the server's own, so what was absent stays absent.
 */
const ABOUT_THE_CALLER: ReadonlySet<number> = new Set([401, 403, 404]);

/** An operation's 200 kept as what names the rows it was made of, answered again from them. */
export interface KeptByReference {
  /** The reference kept for `body`, the 200 the operation answered. */
  refer(body: unknown): string;
  /** The 200 as the operation first answered it, from its reference. */
  answer(reference: string): Promise<unknown>;
}

/** A kept reference begins with this; JSON with "{", a sealed answer with its version ("v1."). */
const REFERENCE = "@";

// One call, without a Hash object per digest: two digests on every idempotent request.
const digest = (text: string) => hash("sha256", text, "base64url");

/** The operations whose bodies carry secrets the caller sends (their writeOnly properties), with those properties. */
const SECRET_FIELDS: ReadonlyMap<string, readonly string[]> = new Map(operationRoutes.filter((r) => r.secretFields.length > 0).map((r) => [r.operationId, r.secretFields]));

/** The purpose of the keyed digests that stand for a secret in a fingerprint. */
const SECRET_IN_FINGERPRINT = "idempotency fingerprint secret";

export class Idempotency {
  constructor(
    private readonly records: IdempotencyRecords,
    private readonly box: SecretBox,
    private readonly byReference: Partial<Record<OperationId, KeptByReference>> = {},
  ) {}

  /**
   * What makes two requests the same request. A secret the caller sent counts by its keyed digest:
   * a plain hash of a secret a person typed could be guessed offline from a copy of the database.
   */
  private fingerprint(operationId: string, req: Pick<Request, "params" | "query" | "body">): string {
    const secrets = SECRET_FIELDS.get(operationId);
    let body: unknown = req.body ?? null;
    if (secrets && body !== null && typeof body === "object") {
      const given = { ...(body as Record<string, unknown>) };
      for (const field of secrets) if (typeof given[field] === "string") given[field] = this.box.digest(given[field], SECRET_IN_FINGERPRINT);
      body = given;
    }
    return digest(canonicalJson([operationId, req.params, req.query, body]));
  }

  /**
   * Answers `req` by `execute` (the operation's handler, answering 200) once for `caller`'s key, or
   * by the answer kept for it. Rejects with an ApiError for the error middleware to render.
   */
  async respond(req: Request, res: Response, operationId: string, caller: string, execute: (commitAnswer: CommitAnswer) => Promise<unknown>, origin?: Origin): Promise<void> {
    const id = digest(`${caller}\n${req.get(IDEMPOTENCY_KEY_HEADER)}`);
    const fingerprint = this.fingerprint(operationId, req);
    if (KEPT_WITH_EFFECT.has(operationId)) return this.runThenKeep(res, operationId, id, fingerprint, execute, origin);
    const claim = await this.records.claim(id, fingerprint, origin);
    if (claim.kind !== "claimed") return this.answerFound(res, operationId, id, fingerprint, claim);
    let kept: Answer | undefined;
    const commitAnswer: CommitAnswer = async (db: Db, body: unknown) => {
      const answer = { status: 200, headers: {}, body };
      if (!(await this.records.completeIn(db, id, claim.owner, this.kept(operationId, id, answer)))) throw keyInUse();
      kept = answer;
    };
    const result = await outcome(res, () => execute(commitAnswer), () => kept).catch(async (e: unknown) => {
      await this.records.release(id, claim.owner, origin);
      throw e;
    });
    // Kept before it is sent: a client that received an answer can always have it again.
    if (!result.kept) await this.records.complete(id, claim.owner, this.kept(operationId, id, result.answer), origin);
    send(res, result.answer);
  }

  /**
   * An operation of KEPT_WITH_EFFECT: runs without a claim, its answer inserted in its effect's
   * transaction. Of attempts racing on one key the first to insert wins; the others roll their
   * effects back (a decline or a refusal included) and answer as the winner did.
   */
  private async runThenKeep(res: Response, operationId: string, id: string, fingerprint: string, execute: (commitAnswer: CommitAnswer) => Promise<unknown>, origin: Origin | undefined): Promise<void> {
    const owner = randomUUID();
    let kept: Answer | undefined;
    const asWrite = (body: unknown): AnswerWrite => {
      const answer = { status: 200, headers: {}, body };
      const settle = (inserted: boolean) => {
        if (!inserted) throw new KeyTaken();
        kept = answer;
      };
      return { record: this.records.kept(id, fingerprint, owner, this.kept(operationId, id, answer)), settle };
    };
    const commitAnswer: CommitAnswer = Object.assign(
      async (db: Db, body: unknown) => {
        const write = asWrite(body);
        write.settle(await this.records.keep(write.record, { outer: db }));
      },
      { asWrite },
    );
    let result: Outcome;
    try {
      result = await outcome(res, () => execute(commitAnswer), () => kept);
    } catch (e) {
      // A fault (5xx) keeps nothing, its effect rolled back: the retry runs again. A refusal about
      // the caller is its answer whatever the record holds: it came before the record was looked at.
      if (e instanceof KeyTaken) return this.answerTaken(res, operationId, id, fingerprint);
      throw e;
    }
    // A refusal, or a 200 not kept with its effect (an operation breaking KEPT_WITH_EFFECT's rule),
    // is kept now, so that at least a retry after this answer replays it.
    if (result.kept || (await this.records.keep(this.records.kept(id, fingerprint, owner, this.kept(operationId, id, result.answer)), { origin }))) return send(res, result.answer);
    return this.answerTaken(res, operationId, id, fingerprint);
  }

  /** Answers a request whose attempt found its key taken by another: as the record says. */
  private async answerTaken(res: Response, operationId: string, id: string, fingerprint: string): Promise<void> {
    const found = await this.records.find(id);
    // Taken, then gone (its attempt's lease lapsed meanwhile): the client's retry runs it.
    if (!found) throw keyInUse();
    return this.answerFound(res, operationId, id, fingerprint, found);
  }

  /** Answers a request whose key another attempt holds: its kept answer, or why not. */
  private async answerFound(res: Response, operationId: string, id: string, fingerprint: string, found: Exclude<Claim, { kind: "claimed" }>): Promise<void> {
    if (found.fingerprint !== fingerprint) {
      throw new ApiError(422, GrpcCode.INVALID_ARGUMENT, "IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was used for a different request; use a new key for a new request");
    }
    if (found.kind === "running") throw keyInUse();
    const answer = await this.opened(operationId, id, found.answer);
    res.setHeader(REPLAYED_HEADER, "true");
    send(res, answer);
  }

  /** The answer as kept for record `id`: a reference, JSON, or sealed unless the operation's answers hold no secret. */
  private kept(operationId: string, id: string, answer: Answer): string {
    const byReference = answer.status === 200 ? this.byReference[operationId as OperationId] : undefined;
    if (byReference) return REFERENCE + byReference.refer(answer.body);
    const json = JSON.stringify(answer);
    return PLAIN_ANSWERS.has(operationId) ? json : this.box.seal(json, sealContext(id));
  }

  /** A kept answer read back (the fingerprint, which names the operation, matched the request's). */
  private async opened(operationId: string, id: string, kept: string): Promise<Answer> {
    if (kept.startsWith(REFERENCE)) {
      const byReference = this.byReference[operationId as OperationId];
      if (!byReference) throw new Error(`a reference kept for ${operationId}, which keeps none`);
      return { status: 200, headers: {}, body: await byReference.answer(kept.slice(REFERENCE.length)) };
    }
    return JSON.parse(kept.startsWith("{") ? kept : this.box.open(kept, sealContext(id))) as Answer;
  }
}

/** The record of a request's key was inserted by another attempt first: this one's effect rolls back. */
class KeyTaken extends Error {}

/** What a request that ran answers, and whether its effect's transaction kept that answer already. */
interface Outcome {
  answer: Answer;
  kept: boolean;
}

/**
 * Runs `execute`: its answer as `keptAnswer` says it was kept with the effect, else its 200 or the
 * 4xx it refused the request with, to keep. What is never kept, a fault (5xx) or a refusal about the
 * caller (ABOUT_THE_CALLER), is thrown on, for the error middleware to answer as without the key.
 */
async function outcome(res: Response, execute: () => Promise<unknown>, keptAnswer: () => Answer | undefined): Promise<Outcome> {
  try {
    const body = await execute();
    const kept = keptAnswer();
    return kept ? { answer: kept, kept: true } : { answer: { status: 200, headers: {}, body }, kept: false };
  } catch (e) {
    const { error } = toApiError(e);
    if (error.status >= 500 || ABOUT_THE_CALLER.has(error.status)) throw e;
    return { answer: { status: error.status, headers: error.headers, body: statusBody(error, String(res.locals.requestId)) }, kept: false };
  }
}

const keyInUse = () =>
  new ApiError(409, GrpcCode.ABORTED, "IDEMPOTENCY_KEY_IN_USE", "a request with this Idempotency-Key is still being processed; retry later", {
    headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
  });

/** A sealed answer opens only on its own record. */
const sealContext = (id: string) => `idempotency:${id}`;

/**
 * For a rollback to a release that reads kept answers whole only (storage/releases.ts): every 200
 * kept by reference is kept whole instead, as that release kept it (JSON), built as a replay
 * answers it. Every reference is of the one operation of `byReference` (Authorize's).
 */
export async function keepAnswersWhole(db: Db, byReference: Partial<Record<OperationId, KeptByReference>>): Promise<number> {
  const [operation, more] = Object.values(byReference);
  if (!operation || more) throw new Error("kept references of one operation are made whole, and only one keeps any");
  const kept = await db.selectFrom("idempotency_records").select(["id", "answer"]).where("answer", "like", `${REFERENCE}%`).execute();
  for (const { id, answer } of kept) {
    const whole: Answer = { status: 200, headers: {}, body: await operation.answer(answer!.slice(REFERENCE.length)) };
    await db.updateTable("idempotency_records").set({ answer: JSON.stringify(whole) }).where("id", "=", id).where("answer", "=", answer).execute();
  }
  return kept.length;
}

/** One kept answer as sealed, for the secrets key's check at start (kept answers last a day: most databases have none). */
export async function sealedAnswerSample(storage: Storage): Promise<Sealed | undefined> {
  const row = await storage.db.selectFrom("idempotency_records").select(["id", "answer"]).where("answer", "not like", "{%").where("answer", "not like", `${REFERENCE}%`).limit(1).executeTakeFirst();
  return row?.answer ? { sealed: row.answer, context: sealContext(row.id) } : undefined;
}

function send(res: Response, answer: Answer): void {
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  if (answer.status >= 400) {
    const body = answer.body as StatusBody;
    res.locals.errorReason = body.details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo")?.reason;
    publishErrorAnswer({ operationId: res.locals.operationId as string | undefined, status: answer.status, body });
  }
  res.status(answer.status).json(answer.body);
}
