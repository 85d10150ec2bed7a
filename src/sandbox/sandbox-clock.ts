// The sandbox's clock as the API shows it (SandboxClockService): read, and moved forward. A move is
// audited, then the work that fell due in the time skipped runs before the answer, so that a read
// made after it sees what would have happened had the time passed.
import type { components } from "../../generated/api.js";
import { recordAudit } from "../audit/audit-record.js";
import type { Target } from "../audit/change.js";
import type { MovableClock } from "../core/clock.js";
import { invalidField } from "../core/errors.js";
import type { Origin } from "../core/origin.js";
import type { Storage } from "../storage/connect.js";
import { writeTransaction, type BeforeCommit } from "../storage/transactions.js";

export type SandboxClockView = components["schemas"]["SandboxClock"];

/** 400 days: enough to roll a yearly window, in one move. */
export const MAX_ADVANCE_SECONDS = 400 * 24 * 60 * 60;
const TARGET: Target = { kind: "AUDIT_TARGET_KIND_SANDBOX_CLOCK", id: "sandbox-clock" };

/** `"3600s"` (the contract's pattern already checked its form) as seconds, within the bounds of a move. */
export function advanceSeconds(duration: string): number {
  const seconds = Number(duration.slice(0, -1));
  if (seconds <= 0) throw invalidField("body.duration", "must be at least 1s", "DURATION_NOT_POSITIVE");
  if (seconds > MAX_ADVANCE_SECONDS) throw invalidField("body.duration", `must be at most ${MAX_ADVANCE_SECONDS}s (400 days)`, "DURATION_TOO_LONG");
  return seconds;
}

export class SandboxClock {
  /** `runDue`: the server's work that acts on time, run at once (what fell due in the time skipped). */
  constructor(
    private readonly storage: Storage,
    private readonly clock: MovableClock,
    private readonly runDue: () => Promise<void>,
  ) {}

  view(): SandboxClockView {
    return { now: new Date(this.clock.now()).toISOString(), offset: `${Math.floor(this.clock.offsetMs() / 1000)}s` };
  }

  /**
   * Moves the clock `seconds` forward once the move's audit event (and kept answer) committed, then
   * runs what fell due; answers the clock as the move left it (what a replay answers too).
   */
  async advance(seconds: number, origin: Origin, beforeCommit?: BeforeCommit<SandboxClockView>): Promise<SandboxClockView> {
    const before = this.view();
    const after: SandboxClockView = { now: new Date(Date.parse(before.now) + seconds * 1000).toISOString(), offset: `${Math.floor(this.clock.offsetMs() / 1000) + seconds}s` };
    await writeTransaction(this.storage, { exclusive: [] }, async (db) => {
      await recordAudit(db, origin, Date.parse(after.now), { operationId: "svc.api.sandbox.v1.SandboxClockService.Advance", target: TARGET, before, after });
      await beforeCommit?.(db, after);
    }, { origin });
    this.clock.advance(seconds * 1000);
    await this.runDue();
    return after;
  }
}
