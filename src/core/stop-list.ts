// What a started server must stop, kept in one list as each part starts: closing, or a start that
// fails midway, stops what was started, in the reverse order (a part stops before what it uses).
import type { Logger } from "./logger.js";

export type Stop = () => Promise<void> | void;

export class StopList {
  private readonly stops: Array<{ part: string; stop: Stop }> = [];

  constructor(private readonly logger: Logger) {}

  /** Registers the stop of `part` (named in the log should it fail), just started. */
  add(part: string, stop: Stop): void {
    this.stops.push({ part, stop });
  }

  /** Registers `instance`'s own stop and answers it. */
  started<T extends { stop(): Promise<void> | void }>(part: string, instance: T): T {
    this.add(part, () => instance.stop());
    return instance;
  }

  /** Runs every stop once, the last registered first; a stop that fails is logged, and the others still run. Answers whether all stopped. */
  async stopAll(): Promise<boolean> {
    let clean = true;
    for (const { part, stop } of this.stops.splice(0).reverse()) {
      try {
        await stop();
      } catch (err) {
        clean = false;
        this.logger.error({ msg: "stopping a part of the server failed", part, err });
      }
    }
    return clean;
  }
}
