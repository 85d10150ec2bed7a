// What traced code calls: the HTTP layer, the storage layer, the execution worker and the logger.
// OpenTelemetry stays behind it (src/tracing/otel.ts), loaded only when traces are configured
// (src/tracing/start.ts); until then every call here is a check of one variable, and the work runs
// as it would untraced. The trace contexts handed out are W3C Trace Context `traceparent` values.

export type SpanKind = "server" | "consumer" | "internal";
export type AttributeValue = string | number | boolean;

export interface SpanOptions {
  kind?: SpanKind;
  /**
   * The span continues this context (a request's headers, an execution's stored `traceparent`)
   * instead of the active one: none, or a malformed one, starts a new trace.
   */
  continues?: { traceparent: string | null | undefined; tracestate?: string | undefined };
  attributes?: Record<string, AttributeValue>;
}

export interface Span {
  setAttribute(name: string, value: AttributeValue): void;
  /** Marks the span failed, with a message that names no value of the request. */
  fail(message?: string): void;
  end(): void;
}

/** What src/tracing/otel.ts implements over OpenTelemetry. */
export interface Tracer {
  /** Starts a span and runs `fn` with it active; the caller ends it. */
  withSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => T): T;
  /** Whether the active span is recorded (sampled): its children would be. */
  recording(): boolean;
  /** The active span's `traceparent`, to carry the context with work that another process may do. */
  traceparent(): string | undefined;
  /** The active span's ids, for a log line. */
  ids(): { trace_id: string; span_id: string } | undefined;
  /** `fn`, to run later within the context active now. */
  bind<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  /** Runs `fn` with no active span: work that belongs to no request, even when one set it going. */
  outside<T>(fn: () => T): T;
}

let tracer: Tracer | undefined;

/** Called by src/tracing/start.ts when traces are on; `undefined` when they stop. */
export function installTracer(installed: Tracer | undefined): void {
  tracer = installed;
}

export const tracingOn = (): boolean => tracer !== undefined;

/**
 * Runs `fn` in a child span of the active one that ends when its promise settles, failed if it
 * rejects. Only under a recorded span: the database work of a request, not that of a background
 * poll, nor of a request its trace's sampler dropped.
 */
export function inChildSpan<T>(name: string, attributes: Record<string, AttributeValue>, fn: () => Promise<T>): Promise<T> {
  // Not an async function: untraced, the work's own promise is answered, with no wrapper around it.
  if (!tracer?.recording()) return fn();
  return tracer.withSpan(name, { attributes }, async (span) => {
    try {
      return await fn();
    } catch (e) {
      span.fail();
      throw e;
    } finally {
      span.end();
    }
  });
}

/** Starts a span and runs `fn` with it active; the caller ends it. Without traces `fn` runs with no span. */
export function withSpan<T>(name: string, options: SpanOptions, fn: (span: Span | undefined) => T): T {
  return tracer ? tracer.withSpan(name, options, fn) : fn(undefined);
}

export const currentTraceparent = (): string | undefined => tracer?.traceparent();

/** `trace_id` and `span_id` of the active span, for a log line; a new object each call (pino merges into it). */
export const traceLogFields = (): Record<string, string> => tracer?.ids() ?? {};

/** `fn` bound to the context active now, for work queued now and run later from another's turn (the SQLite group commit). */
export function bindToContext<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return tracer ? tracer.bind(fn) : fn;
}

export function outsideSpans<T>(fn: () => T): T {
  return tracer ? tracer.outside(fn) : fn();
}
