// The worker thread that exports spans over OTLP/HTTP with OpenTelemetry's own exporter
// (./worker-exporter.ts hands it the spans). Its HTTP client runs in an isolate of its own: in the
// server's, the exporter's requests and answers went through the same functions of Node's http and
// stream modules as the API's, which then saw objects of twice as many shapes and ran slower for every
// request (bench/RESULTS.md, "Where the time goes": traces).
import { parentPort, workerData } from "node:worker_threads";
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

function readable(record: SpanRecord): ReadableSpan {
  const { spanContext, parentSpanContext, traceState, parentTraceState, ...rest } = record;
  const context = { ...spanContext, ...(traceState === undefined ? {} : { traceState: new TraceState(traceState) }) };
  return {
    ...rest,
    ended: true,
    spanContext: () => context,
    ...(parentSpanContext ? { parentSpanContext: { ...parentSpanContext, ...(parentTraceState === undefined ? {} : { traceState: new TraceState(parentTraceState) }) } } : {}),
    resource,
    instrumentationScope: data.scope,
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
