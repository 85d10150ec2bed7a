// SQLite in WAL mode copies the log back into the database file in a checkpoint, by default run
// inside the commit that takes the log past 1,000 pages: on the one thread that answers every
// request, with the whole batch waiting. Here a worker thread with its own connection checkpoints
// instead, PASSIVE, every `intervalMs`; the serving connection still checkpoints past
// `fallbackPages` (so the log restarts), or as by default should the worker stop. Why:
// docs/benchmarks.md, "What the profiles led to".
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type SQLite from "better-sqlite3";

export interface CheckpointerOptions {
  /** How often the worker checkpoints. */
  intervalMs?: number;
  /** Pages (4 KiB) the log may hold before the serving connection checkpoints after its commit. */
  fallbackPages?: number;
}

export const CHECKPOINTER_DEFAULTS = { intervalMs: 100, fallbackPages: 10_000 } as const satisfies Required<CheckpointerOptions>;

const WORKER_HEAP = { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 } as const;

/** SQLite's own default, restored when the worker is gone. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1_000;

// Evaluated as a CommonJS script in the worker: it runs from compiled JS and from TypeScript alike.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.path);
db.pragma("busy_timeout = 0");
// Prepared once: db.pragma() would prepare (and leave to the collector) a statement every round.
const statement = db.prepare("pragma wal_checkpoint(PASSIVE)");
const checkpoint = () => {
  try {
    statement.run();
  } catch {
    // Busy (another process checkpoints) or a transient I/O error: the next round tries again.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on("message", () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage("ready");
`;

export interface Checkpointer {
  /** Stops the worker and closes its connection; resolves once it is gone. */
  stop(): Promise<void>;
}

/** Starts checkpointing the WAL of `database` (a file, in WAL mode) on a worker thread. */
export async function startCheckpointer(database: SQLite.Database, path: string, options: CheckpointerOptions = {}): Promise<Checkpointer> {
  const { intervalMs, fallbackPages } = { ...CHECKPOINTER_DEFAULTS, ...options };
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  // A small heap: the worker allocates next to nothing, and need not reserve what a default
  // young generation would touch over time.
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, path, intervalMs }, resourceLimits: WORKER_HEAP });
  // Never what keeps the process alive.
  worker.unref();
  let stopping = false;
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  const restoreDefault = () => {
    if (!stopping && database.open) database.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
  };
  worker.on("error", restoreDefault);
  worker.once("exit", restoreDefault);
  await new Promise<void>((resolve, reject) => {
    worker.once("message", () => resolve());
    worker.once("error", reject);
  });
  database.pragma(`wal_autocheckpoint = ${fallbackPages}`);
  return {
    stop: async () => {
      stopping = true;
      // Waited for, so it must keep the process alive until it exits: a process with nothing else
      // pending would otherwise end in the middle of the caller's await (exit code 13).
      worker.ref();
      worker.postMessage("stop");
      await exited;
    },
  };
}
