// Fund-event triggers: automations that run on events of the fund (../funds/fund-events.ts). The
// outbox is the executions table itself: in the change's own transaction, an event becomes one
// pending execution per automation whose trigger listens to it and whose condition holds, so it is
// never lost nor made up, and this process's worker is woken once the change commits. Usage
// thresholds fire once (fund_threshold_firings); an event deeper than MAX_FUND_EVENT_DEPTH starts
// nothing. Why: docs/automations.md, "Automations on fund events".
import { AsyncLocalStorage } from "node:async_hooks";
import type { components } from "../../generated/api.js";
import { FundEventTypeValues } from "../../generated/enums.js";
import type { BackgroundTask } from "../core/background-task.js";
import { BoundedMap } from "../core/bounded-map.js";
import type { Clock } from "../core/clock.js";
import { invalidField } from "../core/errors.js";
import { timeOrderedId } from "../core/ids.js";
import type { Logger } from "../core/logger.js";
import type { FundEvent, FundEventBatch, FundEventFacts, FundEventRecorder, FundEventType, UsageAfterSpend } from "../funds/fund-events.js";
import { repeatedSweep } from "../storage/background-failures.js";
import { CHANGE_POLL, recordChange, type ChangeWatch } from "../storage/change-versions.js";
import type { Storage } from "../storage/connect.js";
import type { AutomationExecutionsTable } from "../storage/schema.js";
import type { Db } from "../storage/transactions.js";
import { checkExpression, evaluateBoolean, type CompiledExpression } from "./cel.js";
import { newExecution } from "./executions.js";

type AutomationTriggerInput = components["schemas"]["AutomationTrigger"];
export type FundEventTrigger = components["schemas"]["FundEventTrigger"];

/** Events deeper than this (a chain of automations each triggered by the one before) start nothing. */
export const MAX_FUND_EVENT_DEPTH = 3;

const THRESHOLD: FundEventType = "FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED";

/** The trigger as stored on the automation (automations.fund_trigger, JSON). */
export interface StoredFundTrigger {
  eventTypes: FundEventType[];
  usageThresholdPercents: number[];
  conditionCel: string;
}

/** Checks an automation's fund-event trigger as saved; null when it has none (no trigger, or a webhook one). */
export function checkFundTrigger(triggers: readonly AutomationTriggerInput[], path = "automation.triggers"): StoredFundTrigger | null {
  const trigger = triggers[0];
  if (!trigger || !("fundEvents" in trigger) || !trigger.fundEvents) return null;
  const at = `${path}[0].fundEvents`;
  const { eventTypes, usageThresholdPercents = [], conditionCel = "" } = trigger.fundEvents;
  eventTypes.forEach((type, i) => {
    if (!(FundEventTypeValues as readonly string[]).includes(type) || type === "FUND_EVENT_TYPE_UNSPECIFIED") throw invalidField(`${at}.eventTypes[${i}]`, "must be a known fund event type other than FUND_EVENT_TYPE_UNSPECIFIED");
  });
  if (new Set(eventTypes).size !== eventTypes.length) throw invalidField(`${at}.eventTypes`, "must not name a type twice");
  const thresholds = [...new Set(usageThresholdPercents)].sort((a, b) => a - b);
  if (thresholds.length !== usageThresholdPercents.length) throw invalidField(`${at}.usageThresholdPercents`, "must not name a threshold twice");
  if (eventTypes.includes(THRESHOLD) && thresholds.length === 0) throw invalidField(`${at}.usageThresholdPercents`, `is required with ${THRESHOLD}`);
  if (!eventTypes.includes(THRESHOLD) && thresholds.length > 0) throw invalidField(`${at}.usageThresholdPercents`, `is only allowed with ${THRESHOLD}`);
  if (conditionCel !== "") compileCondition(conditionCel, `${at}.conditionCel`);
  return { eventTypes: eventTypes as FundEventType[], usageThresholdPercents: thresholds, conditionCel };
}

const compileCondition = (source: string, path: string): CompiledExpression => checkExpression(source, path, { stepNames: [], expect: "bool" });

export function fundTriggerView(stored: StoredFundTrigger): FundEventTrigger {
  return { eventTypes: stored.eventTypes, usageThresholdPercents: stored.usageThresholdPercents, conditionCel: stored.conditionCel };
}

/** A published, enabled automation's fund-event trigger, as kept per process. */
interface KeptTrigger {
  automationId: string;
  /** The automation's steps, as stored (JSON): copied into each execution. */
  steps: string;
  eventTypes: ReadonlySet<string>;
  thresholds: readonly number[];
  condition: CompiledExpression | undefined;
}

/** The execution whose step is making a change: its events are one deeper than it. */
interface Cause {
  automationId: string;
  executionId: string;
  depth: number;
  /** Executions its step's events made: the worker is woken for them once the step committed. */
  made: number;
}

const causes = new AsyncLocalStorage<Cause>();

/** What the triggers need of the worker: a wake-up once executions they made have committed. */
export interface WorkerWake {
  notify(): void;
}

/** Firings known to have committed, per process: a spend past a fired threshold writes nothing more. */
const FIRED_KEPT = 100_000;

export class FundTriggers implements FundEventRecorder {
  /** The triggers, the watch's generation taken before they were read, and when (performance.now()). */
  private kept: { triggers: KeptTrigger[]; generation: number; readAt: number } | undefined;
  private worker: WorkerWake | undefined;
  readonly fired = new BoundedMap<string, true>({ entries: FIRED_KEPT });

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly changes: ChangeWatch,
    private readonly logger: Logger,
  ) {}

  /** Reads the triggers ahead of the first change (at start), so that it does not read them itself. */
  async load(): Promise<void> {
    await this.triggers(undefined);
  }

  /** The worker woken for new executions (made after the services, which it runs). */
  attach(worker: WorkerWake): void {
    this.worker = worker;
  }

  /** Call in the transaction of any save or removal of an automation. */
  async recordChange(db: Db): Promise<void> {
    await recordChange(db, "fund_triggers");
  }

  /** Call once that transaction committed. */
  changedHere(): void {
    this.changes.changedHere();
  }

  private async triggers(outer: Db | undefined): Promise<KeptTrigger[]> {
    const kept = this.kept;
    // A read is as fresh as a poll: trusted as long, even while the polls are late (a loaded
    // process), so that a change reads the triggers once per such period, not each time.
    if (kept && (this.changes.trusts(kept.generation) || (kept.generation === this.changes.generation && performance.now() < kept.readAt + CHANGE_POLL.trustMs))) return kept.triggers;
    const generation = this.changes.generation;
    const readAt = performance.now();
    const rows = await (outer ?? this.storage.db)
      .selectFrom("automations")
      .select(["id", "steps", "fund_trigger"])
      .where("fund_trigger", "is not", null)
      .where("is_draft", "=", 0)
      .where("enabled", "=", 1)
      .execute();
    const triggers = rows.flatMap((row) => {
      const stored = JSON.parse(row.fund_trigger!) as StoredFundTrigger;
      try {
        const condition = stored.conditionCel ? compileCondition(stored.conditionCel, "triggers[0].fundEvents.conditionCel") : undefined;
        return [{ automationId: row.id, steps: row.steps, eventTypes: new Set(stored.eventTypes), thresholds: stored.usageThresholdPercents, condition }];
      } catch (err) {
        // Checked at save; one that no longer compiles (a later release's CEL) starts nothing.
        this.logger.error({ msg: "fund-event trigger condition does not compile; the automation does not run on fund events", automationId: row.id, err });
        return [];
      }
    });
    this.kept = { triggers, generation, readAt };
    return triggers;
  }

  async open(types: readonly FundEventType[], outer?: Db): Promise<FundEventBatch | undefined> {
    const cause = causes.getStore();
    const depth = cause ? cause.depth + 1 : 0;
    if (depth > MAX_FUND_EVENT_DEPTH) return undefined;
    const listening = (await this.triggers(outer)).filter((t) => types.some((type) => t.eventTypes.has(type)));
    return listening.length === 0 ? undefined : new Batch(this, listening, cause, depth, this.clock);
  }

  /** Runs an execution's step (`fn`, in the step's transaction) so that the events it causes are one deeper. */
  causedBy<T>(execution: AutomationExecutionsTable, fn: () => Promise<T>): { run: Promise<T>; committed: () => void } {
    const cause: Cause = { automationId: execution.automation_id, executionId: execution.id, depth: execution.depth ?? 0, made: 0 };
    return { run: causes.run(cause, fn), committed: () => cause.made > 0 && this.wake() };
  }

  wake(): void {
    this.worker?.notify();
  }

  /** Removes the firings of windows that ended before `before` (ISO): they can fire no more. */
  async sweep(before: string): Promise<number> {
    const result = await this.storage.db.deleteFrom("fund_threshold_firings").where("window_end", "<", before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

const firingKey = (t: KeptTrigger, a: UsageAfterSpend["authorization"], percent: number) => JSON.stringify([t.automationId, a.userId, a.appId, a.windowStart, a.windowEnd, percent]);

class Batch implements FundEventBatch {
  private made = 0;
  private readonly firedHere: string[] = [];

  constructor(
    private readonly owner: FundTriggers,
    private readonly triggers: readonly KeptTrigger[],
    private readonly cause: Cause | undefined,
    private readonly depth: number,
    private readonly clock: Clock,
  ) {}

  wants(type: FundEventType): boolean {
    return this.triggers.some((t) => t.eventTypes.has(type));
  }

  private event(facts: Omit<FundEvent, "id" | "depth" | "causedBy">): FundEvent {
    return {
      id: `fev_${timeOrderedId(this.clock.now(), 8)}`,
      depth: this.depth,
      causedBy: this.cause ? { automationId: this.cause.automationId, executionId: this.cause.executionId } : null,
      ...facts,
    };
  }

  private execution(t: KeptTrigger, event: FundEvent): AutomationExecutionsTable {
    return { ...newExecution(t.automationId, event.id, { trigger: event }, t.steps, new Date(this.clock.now()).toISOString()), depth: this.depth };
  }

  async record(db: Db, events: readonly FundEventFacts[]): Promise<void> {
    const executions: AutomationExecutionsTable[] = [];
    for (const facts of events) {
      const listening = this.triggers.filter((t) => t.eventTypes.has(facts.type));
      if (listening.length === 0) continue;
      const event = this.event({ authorization: null, amount: null, usageThreshold: null, limitChange: null, ...facts });
      for (const t of listening) if (holds(t, event)) executions.push(this.execution(t, event));
    }
    await this.insert(db, executions);
  }

  async usage(db: Db, after: UsageAfterSpend): Promise<void> {
    const { limit, used, authorization } = after;
    if (limit === null || limit <= 0n) return;
    const due: Array<{ trigger: KeptTrigger; percent: number; key: string; event: FundEvent }> = [];
    for (const trigger of this.triggers) {
      if (!trigger.eventTypes.has(THRESHOLD)) continue;
      for (const percent of trigger.thresholds) {
        // Exact: used / limit >= percent / 100.
        if (used * 100n < limit * BigInt(percent)) break; // ascending: the higher ones are not reached either
        const key = firingKey(trigger, authorization, percent);
        if (this.owner.fired.get(key)) continue;
        const event = this.event({
          type: THRESHOLD,
          occurredAt: after.occurredAt,
          userId: authorization.userId,
          appId: authorization.appId,
          authorization,
          amount: null,
          usageThreshold: { percent, usage: authorization.decision.usage },
          limitChange: null,
        });
        // A condition that does not hold fires nothing now; a later spend in the window asks again.
        if (holds(trigger, event)) due.push({ trigger, percent, key, event });
      }
    }
    if (due.length === 0) return;
    const inserted = await db
      .insertInto("fund_threshold_firings")
      .values(due.map((d) => ({ automation_id: d.trigger.automationId, user_id: authorization.userId, app_id: authorization.appId, window_start: authorization.windowStart, window_end: authorization.windowEnd, percent: d.percent, fired_at: after.occurredAt })))
      .onConflict((oc) => oc.doNothing())
      .returning(["automation_id", "percent"])
      .execute();
    const won = new Set(inserted.map((r) => `${r.automation_id}:${Number(r.percent)}`));
    // Both those fired now and those another decision fired before: either way, fired once this commits.
    this.firedHere.push(...due.map((d) => d.key));
    await this.insert(db, due.filter((d) => won.has(`${d.trigger.automationId}:${d.percent}`)).map((d) => this.execution(d.trigger, d.event)));
  }

  private async insert(db: Db, executions: AutomationExecutionsTable[]): Promise<void> {
    if (executions.length === 0) return;
    await db.insertInto("automation_executions").values(executions).execute();
    this.made += executions.length;
  }

  committed(): void {
    for (const key of this.firedHere) this.owner.fired.set(key, true);
    if (this.made === 0) return;
    // In an execution's step: woken once the step's own transaction committed (`causedBy`).
    if (this.cause) this.cause.made += this.made;
    else this.owner.wake();
  }
}

/** Whether the trigger's condition holds for the event; an evaluation that fails counts as false. */
function holds(trigger: KeptTrigger, event: FundEvent): boolean {
  if (!trigger.condition) return true;
  try {
    return evaluateBoolean(trigger.condition, { trigger: event, webhook: null, steps: {} });
  } catch {
    return false;
  }
}

/** How often the firings of usage thresholds in windows that ended (an hour ago at least) are removed. */
const FIRINGS_SWEEP_MS = 60 * 60_000;

/** Starts the sweep of firings: a threshold's firing is needed only while its window can still have spends decided in it. */
export const startFiringsSweep = (triggers: FundTriggers, clock: Clock, logger: Logger): BackgroundTask =>
  repeatedSweep(logger, FIRINGS_SWEEP_MS, "fund threshold firing sweep", () => triggers.sweep(new Date(clock.now() - FIRINGS_SWEEP_MS).toISOString()), "swept fund threshold firings of ended windows");
