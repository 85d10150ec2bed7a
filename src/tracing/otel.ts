// The Tracer of src/core/spans.ts over OpenTelemetry's SDK: spans sampled as configured, batched
// and exported over OTLP/HTTP from a worker thread (./worker-exporter.ts), queued within
// OTEL_BSP_MAX_QUEUE_SIZE (past it dropped), so a collector out of reach never holds a request.
// Imported only when traces are on (./start.ts). The SDK's base provider, not the Node one, whose
// only addition is a global AsyncLocalStorage context manager this process never has (every parent
// is explicit). docs/operating.md, "Traces".
import { randomUUID } from "node:crypto";
import { isSpanContextValid, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Link, type Span as OtelSpan, type Tracer as OtelTracer } from "@opentelemetry/api";
import { setGlobalErrorHandler, W3CTraceContextPropagator } from "@opentelemetry/core";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from "@opentelemetry/sdk-trace-base";
import type { TracingConfig } from "../config.js";
import type { Logger } from "../core/logger.js";
import type { AttributeValue, LogIds, Span, SpanKind as Kind, SpanOptions, Tracer } from "../core/spans.js";
import { WorkerSpanExporter } from "./worker-exporter.js";

const KINDS: Record<Kind, SpanKind> = { server: SpanKind.SERVER, client: SpanKind.CLIENT, consumer: SpanKind.CONSUMER, internal: SpanKind.INTERNAL };

/** A failed export is logged once a minute at most: a collector down for an hour is one line a minute, not one per batch. */
const EXPORT_FAILURE_LOG_MS = 60_000;

function sampler({ sampler, ratio }: TracingConfig): Sampler {
  const root = sampler.endsWith("traceidratio") ? new TraceIdRatioBasedSampler(ratio) : sampler.endsWith("always_off") ? new AlwaysOffSampler() : new AlwaysOnSampler();
  return sampler.startsWith("parentbased_") ? new ParentBasedSampler({ root }) : root;
}

/** The W3C Trace Context propagator, over the explicit carriers of a request's headers and an execution's stored `traceparent`. */
const propagator = new W3CTraceContextPropagator();
type Carrier = { traceparent?: string | undefined; tracestate?: string | undefined };
const getter = { get: (carrier: Carrier, key: string) => carrier[key as keyof Carrier], keys: () => ["traceparent", "tracestate"] };
const setter = { set: (carrier: Carrier, key: string, value: string) => void (carrier[key as keyof Carrier] = value) };

/** The context `continues` names; a malformed one (or none) is no parent: the propagator gives back ROOT_CONTEXT unchanged, a new trace. */
function continued(continues: SpanOptions["continues"]): Context {
  if (!continues?.traceparent) return ROOT_CONTEXT;
  return propagator.extract(ROOT_CONTEXT, { traceparent: continues.traceparent, tracestate: continues.tracestate }, getter);
}

/** The link to `traceparent`'s span: its ids and flags, of a fixed size (no tracestate is read); none when it is malformed. */
function linkTo(traceparent: string | undefined): Link[] | undefined {
  if (!traceparent) return undefined;
  const linked = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, { traceparent }, getter));
  return linked && isSpanContextValid(linked) ? [{ context: { traceId: linked.traceId, spanId: linked.spanId, traceFlags: linked.traceFlags, isRemote: true } }] : undefined;
}

class SpanHandle implements Span {
  readonly recording: boolean;
  readonly logIds: LogIds | undefined;
  constructor(
    private readonly tracer: OtelTracer,
    private readonly span: OtelSpan,
  ) {
    this.recording = span.isRecording();
    const ids = span.spanContext();
    this.logIds = isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : undefined;
  }
  /** The context whose span is this one: the parent of its children, the source of its `traceparent`. */
  private context(): Context {
    return trace.setSpan(ROOT_CONTEXT, this.span);
  }
  traceparent(): string | undefined {
    const carrier: Carrier = {};
    propagator.inject(this.context(), carrier, setter);
    return carrier.traceparent;
  }
  child(name: string, attributes: Record<string, AttributeValue>, startTime?: number, kind: Kind = "internal"): Span {
    return new SpanHandle(this.tracer, this.tracer.startSpan(name, { kind: KINDS[kind], attributes, startTime }, this.context()));
  }
  setAttribute(name: string, value: AttributeValue): void {
    this.span.setAttribute(name, value);
  }
  fail(message?: string): void {
    this.span.setStatus(message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message });
  }
  end(endTime?: number): void {
    this.span.end(endTime);
  }
}

export interface OpenTelemetry {
  tracer: Tracer;
  /** Exports what is queued and stops. */
  shutdown(): Promise<void>;
}

export async function startOpenTelemetry(config: TracingConfig, service: { name: string; version: string }, logger: Logger): Promise<OpenTelemetry> {
  let failureLoggedAt = -Infinity;
  let failures = 0;
  const reportFailure = (err: unknown) => {
    failures++;
    if (performance.now() - failureLoggedAt < EXPORT_FAILURE_LOG_MS) return;
    failureLoggedAt = performance.now();
    logger.warn({ msg: "traces not exported", failures, error: err instanceof Error ? err.message : String(err) });
    failures = 0;
  };
  // The SDK reports failed exports here (and nothing else that a request did).
  setGlobalErrorHandler(reportFailure);
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) take precedence over ours.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": service.name, "service.version": service.version, "service.instance.id": randomUUID() }))
    .merge(detectResources({ detectors: [envDetector] }));
  const scope = { name: service.name, version: service.version };
  const exporter = new WorkerSpanExporter({ url: config.url, protocol: config.protocol, resource: resource.attributes, scope });
  // The other OTEL_BSP_* variables (the queue's and a batch's sizes, the export's timeout) are the SDK's to read.
  const batches = new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.batchDelayMs });
  const provider = new BasicTracerProvider({ resource, sampler: sampler(config), spanProcessors: [batches] });
  // Not registered globally: no context manager is installed (the Node SDK's would be an
  // AsyncLocalStorage), and every span is started from an explicit parent (src/core/spans.ts).
  const otelTracer = provider.getTracer(scope.name, scope.version);
  const tracer: Tracer = {
    start(name, options) {
      const { kind = "internal", attributes, startTime, linked, continues } = options;
      return new SpanHandle(otelTracer, otelTracer.startSpan(name, { kind: KINDS[kind], attributes, startTime, links: linkTo(linked) }, continued(continues)));
    },
  };
  return {
    tracer,
    shutdown: () => provider.shutdown(),
  };
}
