// An OTLP/HTTP traces receiver, as a collector answers the exporter: POST /v1/traces with an
// ExportTraceServiceRequest, in protobuf (application/x-protobuf) or JSON (application/json),
// answered 200 with an empty ExportTraceServiceResponse. The payloads are kept raw, for scans of
// every byte exported, and decoded into spans (opentelemetry-proto's trace.proto, read field by field
// from the wire format).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  /** StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  links: Array<{ traceId: string; spanId: string }>;
  /** Its start and end, in nanoseconds since the epoch (decimal: beyond a double's precision). */
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  /** The attributes of the resource that exported it (service.name, service.instance.id, ...). */
  resource: Record<string, unknown>;
}

export const SpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3, CONSUMER: 5 } as const;
export const StatusCode = { UNSET: 0, ERROR: 2 } as const;

export interface OtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** Every request body received, as sent. */
  payloads: Buffer[];
  /** Waits (up to `timeoutMs`) until `find` answers spans, and answers them. */
  waitFor(find: (spans: ReceivedSpan[]) => ReceivedSpan[] | undefined, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const payloads: Buffer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") return void res.writeHead(404).end();
      const body = Buffer.concat(chunks);
      payloads.push(body);
      const json = req.headers["content-type"]?.startsWith("application/json");
      try {
        spans.push(...(json ? decodeJson(body) : decodeProtobuf(body)));
      } catch (e) {
        res.writeHead(400).end(String(e));
        return;
      }
      res.writeHead(200, { "Content-Type": json ? "application/json" : "application/x-protobuf" }).end(json ? "{}" : Buffer.alloc(0));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    payloads,
    async waitFor(find, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = find(spans);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`the spans sought were not received within ${timeoutMs} ms; received: ${spans.map((s) => s.name).join(", ")}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// --- protobuf wire format -------------------------------------------------------------------

type Field = { no: number; wire: 0; value: bigint } | { no: number; wire: 1; value: Buffer } | { no: number; wire: 2; value: Buffer } | { no: number; wire: 5; value: Buffer };

function readVarint(buf: Buffer, at: number): [bigint, number] {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    const byte = buf[at++];
    if (byte === undefined) throw new Error("truncated varint");
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value, at];
    shift += 7n;
  }
}

function fieldsOf(buf: Buffer): Field[] {
  const fields: Field[] = [];
  let at = 0;
  while (at < buf.length) {
    const [key, next] = readVarint(buf, at);
    at = next;
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [value, after] = readVarint(buf, at);
      fields.push({ no, wire, value });
      at = after;
    } else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      fields.push({ no, wire, value: buf.subarray(at, at + size) });
      at += size;
    } else if (wire === 2) {
      const [length, after] = readVarint(buf, at);
      fields.push({ no, wire, value: buf.subarray(after, after + Number(length)) });
      at = after + Number(length);
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
  }
  return fields;
}

const bytesOf = (fields: Field[], no: number): Buffer[] => fields.filter((f) => f.no === no && f.wire === 2).map((f) => f.value as Buffer);
const firstBytes = (fields: Field[], no: number): Buffer | undefined => bytesOf(fields, no)[0];
const text = (fields: Field[], no: number): string => firstBytes(fields, no)?.toString("utf8") ?? "";
const hex = (fields: Field[], no: number): string => firstBytes(fields, no)?.toString("hex") ?? "";
const fixed64 = (fields: Field[], no: number): string => (fields.find((f) => f.no === no && f.wire === 1)?.value as Buffer | undefined)?.readBigUInt64LE(0).toString() ?? "0";
const varint = (fields: Field[], no: number): number => Number((fields.find((f) => f.no === no && f.wire === 0)?.value as bigint | undefined) ?? 0n);

/** AnyValue: string 1, bool 2, int 3, double 4, array 5, kvlist 6, bytes 7. */
function anyValue(buf: Buffer): unknown {
  const [f] = fieldsOf(buf);
  if (!f) return undefined;
  switch (f.no) {
    case 1:
      return (f.value as Buffer).toString("utf8");
    case 2:
      return f.value === 1n;
    case 3:
      return Number(BigInt.asIntN(64, f.value as bigint));
    case 4:
      return (f.value as Buffer).readDoubleLE(0);
    case 5:
      return bytesOf(fieldsOf(f.value as Buffer), 1).map(anyValue);
    case 6:
      return keyValues(bytesOf(fieldsOf(f.value as Buffer), 1));
    default:
      return (f.value as Buffer).toString("hex");
  }
}

function keyValues(list: Buffer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list) {
    const fields = fieldsOf(kv);
    const value = firstBytes(fields, 2);
    out[text(fields, 1)] = value ? anyValue(value) : undefined;
  }
  return out;
}

function decodeProtobuf(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of bytesOf(fieldsOf(body), 1)) {
    const rs = fieldsOf(resourceSpans);
    const resourceBytes = firstBytes(rs, 1);
    const resource = resourceBytes ? keyValues(bytesOf(fieldsOf(resourceBytes), 1)) : {};
    for (const scopeSpans of bytesOf(rs, 2)) {
      for (const spanBytes of bytesOf(fieldsOf(scopeSpans), 2)) {
        const s = fieldsOf(spanBytes);
        const statusBytes = firstBytes(s, 15);
        const status = statusBytes ? fieldsOf(statusBytes) : [];
        spans.push({
          traceId: hex(s, 1),
          spanId: hex(s, 2),
          parentSpanId: hex(s, 4),
          name: text(s, 5),
          kind: varint(s, 6),
          attributes: keyValues(bytesOf(s, 9)),
          status: { code: varint(status, 3), message: text(status, 2) },
          links: bytesOf(s, 13).map((l) => ({ traceId: hex(fieldsOf(l), 1), spanId: hex(fieldsOf(l), 2) })),
          startTimeUnixNano: fixed64(s, 7),
          endTimeUnixNano: fixed64(s, 8),
          resource,
        });
      }
    }
  }
  return spans;
}

// --- OTLP/JSON --------------------------------------------------------------------------------

interface JsonKeyValue {
  key: string;
  value: Record<string, unknown>;
}

function jsonValue(v: Record<string, unknown>): unknown {
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return v.doubleValue;
  return v;
}

const jsonAttributes = (list: JsonKeyValue[] | undefined): Record<string, unknown> => Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));

function decodeJson(body: Buffer): ReceivedSpan[] {
  type JsonSpan = { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; startTimeUnixNano?: string | number; endTimeUnixNano?: string | number; attributes?: JsonKeyValue[]; status?: { code?: number; message?: string }; links?: Array<{ traceId: string; spanId: string }> };
  const request = JSON.parse(body.toString("utf8")) as { resourceSpans?: Array<{ resource?: { attributes?: JsonKeyValue[] }; scopeSpans?: Array<{ spans?: JsonSpan[] }> }> };
  return (request.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? "",
        name: s.name,
        kind: s.kind,
        attributes: jsonAttributes(s.attributes),
        status: { code: s.status?.code ?? 0, message: s.status?.message ?? "" },
        links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
        startTimeUnixNano: String(s.startTimeUnixNano ?? "0"),
        endTimeUnixNano: String(s.endTimeUnixNano ?? "0"),
        resource: jsonAttributes(rs.resource?.attributes),
      })),
    ),
  );
}
