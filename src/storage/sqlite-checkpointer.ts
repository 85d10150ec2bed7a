// SQLite in WAL mode appends every commit to the log and copies the log back into the database
// file in a checkpoint. By default the connection whose commit takes the log past 1,000 pages runs
// that checkpoint itself, inside the commit: on the one thread that answers every request, it
// copies about 4 MB and waits for two fsyncs, and every request of the batch waits with it
// (bench/RESULTS.md, "The webhook intake": about half of the group commit's time under its load).
//
// Here a worker thread with a connection of its own checkpoints instead, PASSIVE (it never waits on
// the writer or a reader, nor makes them wait), every `intervalMs`. SQLite restarts the log only at
// a write that finds it wholly copied, which a checkpoint running beside steady commits seldom
// leaves it: so the serving connection still checkpoints past `fallbackPages`, when what is left to
// copy is what came after the worker's last round, and the log restarts after it. Should the worker
// stop without being asked, the serving connection goes back to SQLite's default. The log stays
// bounded either way.
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
