// What traced code calls (the HTTP layer, storage, the execution worker, log lines), with
// OpenTelemetry behind it (src/tracing/), loaded only when traces are configured: until then each call
// is a check of one variable. A span is carried explicitly, as a handle, by what its work is for (a
// request's RequestContext, an execution's run), never as an "active" span that would take an
// AsyncLocalStorage. Times given to spans are readings of performance.now() (for ./deferred-span.ts).
// Why: docs/operating.md, "Traces".

export type SpanKind = "server" | "client" | "consumer" | "internal";
export type AttributeValue = string | number | boolean;

/** The ids of a span, as a log line carries them, to go from the log to the trace and back. */
export interface LogIds {
  trace_id: string;
  span_id: string;
}

export interface SpanOptions {
  kind?: SpanKind;
  /**
   * The context the span continues (a request's headers, an execution's stored `traceparent`):
   * none, or a malformed one, starts a new trace.
   */
  continues?: { traceparent: string | null | undefined; tracestate?: string | undefined };
  /**
   * A `traceparent` the span links to without joining its trace (a caller's whose context is not
   * continued): the link holds its ids alone, never a `tracestate`; a malformed one is left out.
   */
  linked?: string | undefined;
  /** When the span's work began, if before now. */
  startTime?: number | undefined;
  attributes?: Record<string, AttributeValue>;
}

export interface Span {
  /** Whether the span is recorded (sampled): its children would be. */
  readonly recording: boolean;
  /** Its ids for the log lines of its work; undefined for a span of no valid context. */
  readonly logIds: LogIds | undefined;
  /** Its `traceparent`, to carry the context with work that another process may do (an execution). */
  traceparent(): string | undefined;
  /** Starts a span whose parent is this one (its work began at `startTime`, if before now; internal unless `kind` says); the caller ends it. */
  child(name: string, attributes: Record<string, AttributeValue>, startTime?: number, kind?: SpanKind): Span;
  setAttribute(name: string, value: AttributeValue): void;
  /** Marks the span failed, with a message that names no value of the request. */
  fail(message?: string): void;
  /** Ends the span now, or at `endTime`. */
  end(endTime?: number): void;
}

/** What src/tracing/otel.ts implements over OpenTelemetry. */
export interface Tracer {
  /** Starts a span continuing `options.continues` (a new trace without); the caller ends it. */
  start(name: string, options: SpanOptions): Span;
}

let tracer: Tracer | undefined;

/** Called by src/tracing/start.ts when traces are on; `undefined` when they stop. */
export function installTracer(installed: Tracer | undefined): void {
  tracer = installed;
}

export const tracingOn = (): boolean => tracer !== undefined;

/** Starts a span (the caller ends it); none while traces are off. */
export const startSpan = (name: string, options: SpanOptions): Span | undefined => tracer?.start(name, options);

/**
 * Runs `fn` in a child span of `parent` that ends when its promise settles, failed if it rejects.
 * Only under a recorded span: the database work of a request or an execution, not that of a
 * background poll (no parent), nor of a request its trace's sampler dropped.
 */
export function inChildSpan<T>(parent: Span | undefined, name: string, attributes: Record<string, AttributeValue>, fn: () => Promise<T>): Promise<T> {
  // Not an async function: untraced, the work's own promise is answered, with no wrapper around it.
  if (!parent?.recording) return fn();
  const span = parent.child(name, attributes);
  return endedWith(span, fn());
}

async function endedWith<T>(span: Span, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (e) {
    span.fail();
    throw e;
  } finally {
    span.end();
  }
}

/**
 * `line` (made for this call) with the ids of `span`, the request's or the execution's it is about,
 * added; untouched without one: an untraced line carries no trace fields.
 */
export function withLogIds<L extends object>(line: L, span: Span | undefined): L | (L & LogIds) {
  const ids = span?.logIds;
  return ids ? Object.assign(line, ids) : line;
}
