// What a started server must stop, kept in one list as each part starts: closing, or a start that
// fails midway, stops what was started, in the reverse order (a part stops before what it uses).

export type Stop = () => Promise<void> | void;

export class StopList {
  private readonly stops: Stop[] = [];

  /** Registers the stop of a part just started. */
  add(stop: Stop): void {
    this.stops.push(stop);
  }

  /** Registers `part`'s own stop and answers the part. */
  started<T extends { stop(): Promise<void> | void }>(part: T): T {
    this.add(() => part.stop());
    return part;
  }

  /** Runs every stop once, the last registered first; each runs even when one before it failed, and the first failure is thrown at the end. */
  async stopAll(): Promise<void> {
    let failure: { err: unknown } | undefined;
    for (const stop of this.stops.splice(0).reverse()) {
      try {
        await stop();
      } catch (err) {
        failure ??= { err };
      }
    }
    if (failure) throw failure.err;
  }
}
