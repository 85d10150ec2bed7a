// The Tracer of src/core/tracing.ts over OpenTelemetry's Node SDK: spans sampled as configured,
// batched and exported over OTLP/HTTP. Imported only when traces are on (./start.ts).
//
// An exporter that cannot reach its collector never holds a request: spans are queued (bounded:
// OTEL_BSP_MAX_QUEUE_SIZE, 2048; past it they are dropped) and exported in the background, each
// export bounded by OTEL_EXPORTER_OTLP_TIMEOUT (10 s).
import { randomUUID } from "node:crypto";
import { context, isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span as OtelSpan } from "@opentelemetry/api";
import { setGlobalErrorHandler, W3CTraceContextPropagator } from "@opentelemetry/core";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, NodeTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from "@opentelemetry/sdk-trace-node";
import type { TracingConfig } from "../config.js";
import type { Logger } from "../core/logger.js";
import type { Span, SpanKind as Kind, SpanOptions, Tracer } from "../core/tracing.js";

const KINDS: Record<Kind, SpanKind> = { server: SpanKind.SERVER, consumer: SpanKind.CONSUMER, internal: SpanKind.INTERNAL };

/** A failed export is logged once a minute at most: a collector down for an hour is one line a minute, not one per batch. */
const EXPORT_FAILURE_LOG_MS = 60_000;

function sampler({ sampler, ratio }: TracingConfig): Sampler {
  const root = sampler.endsWith("traceidratio") ? new TraceIdRatioBasedSampler(ratio) : sampler.endsWith("always_off") ? new AlwaysOffSampler() : new AlwaysOnSampler();
  return sampler.startsWith("parentbased_") ? new ParentBasedSampler({ root }) : root;
}

async function exporter({ url, protocol }: TracingConfig) {
  // Headers, timeout and compression: OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, _TIMEOUT, _COMPRESSION, read by the exporter.
  if (protocol === "http/json") return new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter({ url });
  return new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter({ url });
}

class SpanHandle implements Span {
  constructor(private readonly span: OtelSpan) {}
  setAttribute(name: string, value: string | number | boolean): void {
    this.span.setAttribute(name, value);
  }
  fail(message?: string): void {
    this.span.setStatus(message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message });
  }
  end(): void {
    this.span.end();
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
  // The SDK reports failed exports here (and nothing else that a request did).
  setGlobalErrorHandler((err) => {
    failures++;
    if (performance.now() - failureLoggedAt < EXPORT_FAILURE_LOG_MS) return;
    failureLoggedAt = performance.now();
    logger.warn({ msg: "traces not exported", failures, error: err instanceof Error ? err.message : String(err) });
    failures = 0;
  });
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) take precedence over ours.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": service.name, "service.version": service.version, "service.instance.id": randomUUID() }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, sampler: sampler(config), spanProcessors: [new BatchSpanProcessor(await exporter(config))] });
  const propagator = new W3CTraceContextPropagator();
  // The context manager over AsyncLocalStorage: a span stays active across the awaits of the work it wraps.
  provider.register({ propagator });
  const otelTracer = provider.getTracer(service.name, service.version);

  const parentOf = (options: SpanOptions): Context => {
    if (!options.continues) return context.active();
    const { traceparent, tracestate } = options.continues;
    if (!traceparent) return ROOT_CONTEXT;
    // A malformed traceparent is no parent: the propagator gives back ROOT_CONTEXT unchanged, a new trace.
    return propagator.extract(ROOT_CONTEXT, { traceparent, tracestate }, { get: (carrier, key) => carrier[key as "traceparent"], keys: () => ["traceparent", "tracestate"] });
  };

  const tracer: Tracer = {
    withSpan(name, options, fn) {
      const parent = parentOf(options);
      const span = otelTracer.startSpan(name, { kind: KINDS[options.kind ?? "internal"], ...(options.attributes ? { attributes: options.attributes } : {}) }, parent);
      return context.with(trace.setSpan(parent, span), fn, undefined, new SpanHandle(span));
    },
    recording: () => trace.getActiveSpan()?.isRecording() ?? false,
    traceparent() {
      const carrier: { traceparent?: string } = {};
      propagator.inject(context.active(), carrier, { set: (c, key, value) => void (c[key as "traceparent"] = value) });
      return carrier.traceparent;
    },
    ids() {
      const spanContext = trace.getActiveSpan()?.spanContext();
      return spanContext && isSpanContextValid(spanContext) ? { trace_id: spanContext.traceId, span_id: spanContext.spanId } : undefined;
    },
    bind: (fn) => context.bind(context.active(), fn),
    outside: (fn) => context.with(ROOT_CONTEXT, fn),
  };
  return {
    tracer,
    async shutdown() {
      await provider.shutdown();
      // Registered globally by this start only: a later start in this process registers anew.
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
