// Bulk redrive: every failed execution of an automation created within a range redriven as Redrive
// does it (rerun-rows.ts), at most once each, and its parked executions made due. The executions it
// makes due are parked in turn, BULK_REDRIVE_PER_SECOND a second, so they enter the workers' queue
// gradually; a call looks at BULK_REDRIVE_MAX_PER_CALL executions at most, CHUNK per transaction,
// and a page token continues it. docs/automations.md, "Redrive and replay".
import { sql, type ExpressionBuilder } from "kysely";
import type { components } from "../../generated/api.js";
import { recordAudit } from "../audit/audit-record.js";
import { automationTarget } from "../audit/change.js";
import type { Clock } from "../core/clock.js";
import { invalidField } from "../core/errors.js";
import type { Origin } from "../core/origin.js";
import type { PageTokens } from "../core/pagination.js";
import { parseTimestamp } from "../core/timestamp.js";
import type { Storage } from "../storage/connect.js";
import type { AutomationExecutionsTable, Database } from "../storage/schema.js";
import { writeTransaction } from "../storage/transactions.js";
import { lockKey as automationLock } from "./automations.js";
import { ExecutionState, newExecution } from "./executions.js";
import { publishedSteps, redriveLock, redriveSource, rerunRow } from "./rerun-rows.js";

export type BulkRedriveRequest = components["schemas"]["AutomationExecutionServiceBulkRedriveRequest"];
export type BulkRedriveAnswer = components["schemas"]["AutomationExecutionServiceBulkRedriveResponse"];

const OPERATION = "svc.api.automations.v1.AutomationExecutionService.BulkRedrive";

/** Executions looked at per transaction: it holds a lock per failed one, and reads the bodies (64 KB at most each) of those it redrives. */
export const CHUNK = 100;

export interface BulkRedriveSettings {
  /** Executions made due per second, the first at once. */
  perSecond: number;
  /** Executions one call looks at, at most. */
  maxPerCall: number;
}

/** An execution of the range, as the chunk's first read finds it. */
interface Key {
  id: string;
  created_at: string;
  state: string;
  redriven_by: string | null;
}

type Range = Pick<BulkRedriveAnswer, "since" | "until" | "includeParked">;

type Counts = Pick<BulkRedriveAnswer, "redrivenCount" | "madeDueCount" | "alreadyRedrivenCount">;

const iso = (ms: number) => new Date(ms).toISOString();

/** The id of the execution that redrives `e.id`, if any: one seek in the unique index of `redrive_of`. */
const redrivenBy = (eb: ExpressionBuilder<Database & { e: AutomationExecutionsTable }, "e">) =>
  eb.selectFrom("automation_executions as redrive").select("redrive.id").whereRef("redrive.redrive_of", "=", "e.id").as("redriven_by");

export class BulkRedrive {
  constructor(
    private readonly deps: {
      storage: Storage;
      clock: Clock;
      pageTokens: PageTokens;
      settings: BulkRedriveSettings;
      /** Tells this process's worker that executions became due. */
      wake: () => void;
    },
  ) {}

  async redrive(automationId: string, request: BulkRedriveRequest, origin?: Origin): Promise<BulkRedriveAnswer> {
    const { storage, clock, pageTokens, settings } = this.deps;
    const since = parseTimestamp(request.since, "body.since");
    const until = parseTimestamp(request.until, "body.until");
    if (until <= since) throw invalidField("body.until", "must be later than since");
    // The range has ended: the executions this call makes (created now) are never in it.
    if (Date.parse(until) > clock.now()) throw invalidField("body.until", "must not be later than the server's current time");
    const includeParked = request.includeParked ?? true;
    const scope = `automation_executions:bulk-redrive:${automationId}:${since}:${until}:${includeParked}`;
    const resumed = pageTokens.decode(scope, request.continuationToken, "body.continuationToken", 3);
    await publishedSteps(storage.db, automationId);

    // The turns: the k-th execution made due is due at start + k / perSecond, continuing an earlier call's.
    const start = Math.max(clock.now(), Number(resumed?.[2] ?? 0));
    const turnAt = (k: number) => start + Math.floor((k * 1000) / settings.perSecond);
    let turn = 0;
    const nextTurn = () => turnAt(turn++);
    const counts: Counts = { redrivenCount: 0, madeDueCount: 0, alreadyRedrivenCount: 0 };
    let after = resumed ? { created_at: String(resumed[0]), id: String(resumed[1]) } : undefined;
    let examined = 0;
    let more = true;
    while (more && examined < settings.maxPerCall) {
      const limit = Math.min(CHUNK, settings.maxPerCall - examined);
      const keys = await this.chunk(automationId, since, until, after, limit);
      examined += keys.length;
      after = keys[keys.length - 1] ?? after;
      more = keys.length === limit;
      const done = await this.apply(automationId, { since, until, includeParked }, keys, nextTurn, origin);
      counts.redrivenCount += done.redrivenCount;
      counts.madeDueCount += done.madeDueCount;
      counts.alreadyRedrivenCount += done.alreadyRedrivenCount;
    }
    const made = counts.redrivenCount + counts.madeDueCount;
    return {
      since,
      until,
      includeParked,
      examinedCount: examined,
      ...counts,
      lastAttemptAt: made === 0 ? null : iso(turnAt(turn - 1)),
      continuationToken: more && after ? pageTokens.encode(scope, [after.created_at, after.id, turnAt(turn)]) : "",
    };
  }

  /** Up to `limit` executions of the range after `after`, oldest first: a seek in the index of the automation's executions by creation. */
  private chunk(automationId: string, since: string, until: string, after: { created_at: string; id: string } | undefined, limit: number): Promise<Key[]> {
    const { db } = this.deps.storage;
    let q = db
      .selectFrom("automation_executions as e")
      .select(["e.id", "e.created_at", "e.state"])
      .select(redrivenBy)
      .where("e.automation_id", "=", automationId)
      .where("e.created_at", "<", until);
    q = after
      ? q.where((eb) => eb.or([eb("e.created_at", ">", after.created_at), eb.and([eb("e.created_at", "=", after.created_at), eb("e.id", ">", after.id)])]))
      : q.where("e.created_at", ">=", since);
    return q.orderBy("e.created_at").orderBy("e.id").limit(limit).execute();
  }

  /**
   * In one transaction: redrives the chunk's failed executions not redriven yet (each under the lock
   * a single Redrive of it takes) and makes its parked ones due, each at its turn; audited.
   */
  private async apply(automationId: string, range: Range, keys: readonly Key[], nextTurn: () => number, origin: Origin | undefined): Promise<Counts> {
    const { includeParked } = range;
    const { storage, clock } = this.deps;
    const failed = keys.filter((k) => k.state === ExecutionState.ERROR);
    const candidates = [...failed.filter((k) => k.redriven_by === null), ...(includeParked ? keys.filter((k) => k.state === ExecutionState.PARKED) : [])];
    const counts: Counts = { redrivenCount: 0, madeDueCount: 0, alreadyRedrivenCount: failed.length - failed.filter((k) => k.redriven_by === null).length };
    if (candidates.length === 0) return counts;
    const locks = { exclusive: candidates.filter((k) => k.state === ExecutionState.ERROR).map((k) => redriveLock(k.id)), shared: [automationLock(automationId)] };
    const made = await writeTransaction(
      storage,
      locks,
      async (db) => {
        const steps = await publishedSteps(db, automationId);
        const now = clock.now();
        const at = iso(now);
        // Read again under the locks: a worker or a Redrive may have changed them since.
        const rows = await db
          .selectFrom("automation_executions as e")
          .select(["e.id", "e.state", "e.event_id", "e.depth", "e.next_attempt_at"])
          .select(sql<string>`case when e.state = ${ExecutionState.ERROR} then e.context else '' end`.as("context"))
          .select(redrivenBy)
          .where("e.id", "in", candidates.map((k) => k.id))
          .orderBy("e.created_at")
          .orderBy("e.id")
          .execute();
        const redrives: AutomationExecutionsTable[] = [];
        const done: Counts = { redrivenCount: 0, madeDueCount: 0, alreadyRedrivenCount: 0 };
        for (const row of rows) {
          if (row.state === ExecutionState.ERROR && row.redriven_by !== null) done.alreadyRedrivenCount++;
          else if (row.state === ExecutionState.ERROR) {
            const due = iso(nextTurn());
            const execution = rerunRow(redriveSource(row), (eventId, context) => newExecution(automationId, eventId, context, steps, at, undefined, origin));
            redrives.push({ ...execution, state: ExecutionState.PARKED, next_attempt_at: due });
          } else if (row.state === ExecutionState.PARKED) {
            const due = iso(nextTurn());
            // Never later than it was due; it keeps its step results (the attempts made) and its id.
            await db.updateTable("automation_executions").set({ next_attempt_at: due }).where("id", "=", row.id).where("state", "=", ExecutionState.PARKED).where("next_attempt_at", ">", due).execute();
            done.madeDueCount++;
          }
        }
        if (redrives.length > 0) await db.insertInto("automation_executions").values(redrives).execute();
        done.redrivenCount = redrives.length;
        if (done.redrivenCount + done.madeDueCount > 0) {
          // The range asked for, and what this transaction did within it (its first and last execution's createdAt).
          const bulkRedrive = { ...range, examinedCount: keys.length, ...done, from: keys[0]?.created_at ?? null, through: keys[keys.length - 1]?.created_at ?? null };
          await recordAudit(db, origin, now, { operationId: OPERATION, target: automationTarget(automationId), before: null, after: { bulkRedrive } });
        }
        return done;
      },
      { origin },
    );
    if (made.redrivenCount + made.madeDueCount > 0) this.deps.wake();
    return { redrivenCount: made.redrivenCount, madeDueCount: made.madeDueCount, alreadyRedrivenCount: counts.alreadyRedrivenCount + made.alreadyRedrivenCount };
  }
}
