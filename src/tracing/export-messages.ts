// What the server's thread and the export worker (./export-worker.ts) say to each other: spans as
// plain values (a structured clone keeps no methods nor classes), and the outcome of each request.
import type { Attributes, HrTime, Link, SpanContext, SpanKind, SpanStatus } from "@opentelemetry/api";
import type { InstrumentationScope } from "@opentelemetry/core";
import type { TimedEvent } from "@opentelemetry/sdk-trace-base";

export interface ExportWorkerData {
  url: string;
  protocol: "http/protobuf" | "http/json";
  /** The provider's resource and its one tracer's scope: the same for every span, sent once rather than with each. */
  resource: Attributes;
  scope: InstrumentationScope;
}

type PlainContext = Omit<SpanContext, "traceState">;

/** A ReadableSpan's values but its resource and scope (./ExportWorkerData); its trace states serialized. */
export interface SpanRecord {
  name: string;
  kind: SpanKind;
  spanContext: PlainContext;
  traceState: string | undefined;
  parentSpanContext: PlainContext | undefined;
  parentTraceState: string | undefined;
  startTime: HrTime;
  endTime: HrTime;
  duration: HrTime;
  status: SpanStatus;
  attributes: Attributes;
  links: Link[];
  events: TimedEvent[];
  droppedAttributesCount: number;
  droppedEventsCount: number;
  droppedLinksCount: number;
}

export type ToWorker = { id: number; kind: "export"; spans: SpanRecord[] } | { id: number; kind: "flush" | "shutdown" };

export interface FromWorker {
  id: number;
  ok: boolean;
  error?: string | undefined;
}
