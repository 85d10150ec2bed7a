// A task run in the background every `intervalMs`, one run at a time (a run still under way when the
// next is due is not doubled), which `stop` waits for, so that nothing it does outlives the
// resources it uses (a database about to close). The timer does not keep the process alive.
export class BackgroundTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  /** `run` must not reject: it handles (logs) its own failures. */
  constructor(
    private readonly intervalMs: number,
    private readonly run: () => Promise<void>,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.run().finally(() => (this.running = undefined));
    }, this.intervalMs).unref();
  }

  /** Runs it now, after the run under way if there is one (which may have begun before what calls for this one). */
  async runNow(): Promise<void> {
    await this.running;
    this.running ??= this.run().finally(() => (this.running = undefined));
    await this.running;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
