// A SpanExporter that hands each batch to a worker thread (./export-worker.ts), where OpenTelemetry's
// OTLP/HTTP exporter sends it: the batch is copied over as plain values, and the HTTP client, the
// serialization and the retries run off the server's thread and out of its isolate.
import { Worker } from "node:worker_threads";
import type { SpanContext } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { ExportWorkerData, FromWorker, SpanRecord, ToWorker } from "./export-messages.js";

const plain = ({ traceState: _, ...context }: SpanContext) => context;

function record(span: ReadableSpan): SpanRecord {
  const context = span.spanContext();
  const parent = span.parentSpanContext;
  return {
    name: span.name,
    kind: span.kind,
    spanContext: plain(context),
    traceState: context.traceState?.serialize(),
    parentSpanContext: parent ? plain(parent) : undefined,
    parentTraceState: parent?.traceState?.serialize(),
    startTime: span.startTime,
    endTime: span.endTime,
    duration: span.duration,
    status: span.status,
    attributes: span.attributes,
    links: span.links.length === 0 ? [] : span.links.map((l) => ({ ...l, context: plain(l.context) })),
    events: span.events,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}

/**
 * The worker's entry: built, the .js beside this file. Run from the sources under tsx (as the tests
 * and the scripts run them), a worker does not inherit tsx's loader: it registers it, then loads the .ts.
 */
function workerEntry(): URL {
  if (!import.meta.url.endsWith(".ts")) return new URL("./export-worker.js", import.meta.url);
  const source = new URL("./export-worker.ts", import.meta.url).href;
  const code = `import { register } from ${JSON.stringify(import.meta.resolve("tsx/esm/api"))}; register(); await import(${JSON.stringify(source)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}

/** The worker's heap, bounded: a batch it cannot hold ends the worker (started again), never the server. */
const WORKER_HEAP_MB = 64;

/** A worker that died is started again at the next export, no sooner than this after it died; doubled while each new one dies before an export succeeds. */
const RESTART_DELAY_MS = { first: 1_000, max: 60_000 };

export class WorkerSpanExporter implements SpanExporter {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, (answer: FromWorker) => void>();
  private nextId = 0;
  private shutDown = false;
  /** Why the last worker ended, while no other is started. */
  private died: string | undefined;
  private restartAt = 0;
  private restartDelayMs = RESTART_DELAY_MS.first;

  constructor(private readonly data: ExportWorkerData) {
    this.start();
  }

  private start(): Worker {
    const worker = new Worker(workerEntry(), { workerData: this.data, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    // The process's exit is not held up by it: a shutdown flushes through it first (./start.ts).
    worker.unref();
    worker.on("message", (answer: FromWorker) => {
      if (answer.ok) this.restartDelayMs = RESTART_DELAY_MS.first;
      this.pending.get(answer.id)?.(answer);
      this.pending.delete(answer.id);
    });
    worker.on("error", (err) => this.lost(worker, `the export worker failed: ${err.message}`));
    worker.on("exit", () => this.lost(worker, "the export worker stopped"));
    this.worker = worker;
    this.died = undefined;
    return worker;
  }

  /** Its questions are answered failed; the next export after the delay starts another. */
  private lost(worker: Worker, reason: string): void {
    if (worker !== this.worker) return;
    this.worker = undefined;
    this.died = reason;
    this.restartAt = performance.now() + this.restartDelayMs;
    this.restartDelayMs = Math.min(this.restartDelayMs * 2, RESTART_DELAY_MS.max);
    for (const answer of this.pending.values()) answer({ id: -1, ok: false, error: reason });
    this.pending.clear();
  }

  private ask(message: Omit<ToWorker, "id">): Promise<FromWorker> {
    if (this.shutDown) return Promise.resolve({ id: -1, ok: false, error: "shut down" });
    const worker = this.worker ?? (performance.now() >= this.restartAt ? this.start() : undefined);
    if (!worker) return Promise.resolve({ id: -1, ok: false, error: this.died });
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      worker.postMessage({ ...message, id });
    });
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    void this.ask({ kind: "export", spans: spans.map(record) } as Omit<ToWorker, "id">).then(({ ok, error }) =>
      resultCallback(ok ? { code: ExportResultCode.SUCCESS } : { code: ExportResultCode.FAILED, error: new Error(error ?? "export failed") }),
    );
  }

  async forceFlush(): Promise<void> {
    const { ok, error } = await this.ask({ kind: "flush" });
    if (!ok) throw new Error(error);
  }

  async shutdown(): Promise<void> {
    if (this.shutDown) return;
    const worker = this.worker;
    if (worker) await this.ask({ kind: "shutdown" });
    this.shutDown = true;
    this.worker = undefined;
    await worker?.terminate();
  }
}
