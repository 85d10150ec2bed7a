// The worker thread that exports spans over OTLP/HTTP with OpenTelemetry's own exporter
// (./worker-exporter.ts hands it the spans). Its HTTP client runs in an isolate of its own: in the
// server's, the exporter's requests and answers went through the same functions of Node's http and
// stream modules as the API's, which then saw objects of twice as many shapes and ran slower for every
// request (bench/RESULTS.md, "Where the time goes": traces).
import { parentPort, workerData } from "node:worker_threads";
import type { SpanContext } from "@opentelemetry/api";
import { ExportResultCode, TraceState } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { ExportWorkerData, SpanRecord, ToWorker } from "./export-messages.js";

async function exporter({ url, protocol }: ExportWorkerData): Promise<SpanExporter> {
  // Headers, timeout and compression: the OTEL_* variables, read by the exporter from the environment this thread shares.
  if (protocol === "http/json") return new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter({ url });
  return new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter({ url });
}

const data = workerData as ExportWorkerData;
/** One object for every span: the transformer groups spans by their Resource object. */
const resource = resourceFromAttributes(data.resource);

/** Every span as the exporter reads it, each field written out: one object shape for all (spreads of the records made each a shape of its own). */
function readable(r: SpanRecord): ReadableSpan {
  const context: SpanContext = r.traceState === undefined ? r.spanContext : { ...r.spanContext, traceState: new TraceState(r.traceState) };
  const parent = r.parentSpanContext && (r.parentTraceState === undefined ? r.parentSpanContext : { ...r.parentSpanContext, traceState: new TraceState(r.parentTraceState) });
  return {
    name: r.name,
    kind: r.kind,
    spanContext: () => context,
    parentSpanContext: parent,
    startTime: r.startTime,
    endTime: r.endTime,
    duration: r.duration,
    ended: true,
    status: r.status,
    attributes: r.attributes,
    links: r.links,
    events: r.events,
    resource,
    instrumentationScope: data.scope,
    droppedAttributesCount: r.droppedAttributesCount,
    droppedEventsCount: r.droppedEventsCount,
    droppedLinksCount: r.droppedLinksCount,
  };
}

const port = parentPort!;
const made = exporter(data);
const failed = (id: number, err: unknown) => port.postMessage({ id, ok: false, error: err instanceof Error ? err.message : String(err) });
// Every message is answered, a failure included (the exporter not made, a span it could not read):
// the server's thread keeps each question until its answer.
port.on("message", (message: ToWorker) => {
  made
    .then(async (e) => {
      if (message.kind === "export") {
        e.export(message.spans.map(readable), ({ code, error }) => port.postMessage({ id: message.id, ok: code === ExportResultCode.SUCCESS, error: error?.message }));
        return;
      }
      await (message.kind === "flush" ? e.forceFlush?.() : e.shutdown());
      port.postMessage({ id: message.id, ok: true });
    })
    .catch((err: unknown) => failed(message.id, err));
});
