// The one source of time. Production uses the system clock; tests pass a clock they can move.

export interface Clock {
  /** Current time in milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to, for tests. */
export class ManualClock implements Clock {
  constructor(private ms: number) {}
  now(): number {
    return this.ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/**
 * The sandbox's clock: another clock (the system's) moved forward by an offset that only grows
 * (SandboxClockService.Advance). Everything of a sandbox server reads this one instance.
 */
export class MovableClock implements Clock {
  private offset = 0;
  constructor(private readonly base: Clock = systemClock) {}
  now(): number {
    return this.base.now() + this.offset;
  }
  /** How far ahead of the base clock it is, in milliseconds. */
  offsetMs(): number {
    return this.offset;
  }
  advance(ms: number): void {
    if (!(ms > 0)) throw new RangeError("a movable clock only moves forward");
    this.offset += ms;
  }
}
