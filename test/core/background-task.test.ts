import { describe, expect, it } from "vitest";
import { BackgroundTask } from "../../src/core/background-task.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("BackgroundTask", () => {
  it("runs one at a time although runs take longer than the interval, and stop waits for the one under way", async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    let finished = 0;
    const task = new BackgroundTask(5, async () => {
      running++;
      runs++;
      most = Math.max(most, running);
      await sleep(40);
      running--;
      finished++;
    });
    task.start();
    await sleep(150);
    await task.stop();
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(most).toBe(1);
    // Nothing runs after stop, and the last run had ended when stop resolved.
    expect(finished).toBe(runs);
    await sleep(50);
    expect(runs).toBe(finished);
  });

  it("runNow runs it at once, after the run under way (which began before what calls for it), never two at a time", async () => {
    let running = 0;
    let most = 0;
    const starts: number[] = [];
    const task = new BackgroundTask(60_000, async () => {
      running++;
      most = Math.max(most, running);
      starts.push(starts.length);
      await sleep(30);
      running--;
    });
    await task.runNow();
    expect(starts).toHaveLength(1);
    const under = task.runNow();
    await task.runNow();
    await under;
    expect(starts.length).toBeGreaterThanOrEqual(2);
    expect(most).toBe(1);
    await task.stop();
  });
});
