// The export worker is a thread of its own that can die (its heap is bounded, so a batch it cannot
// hold ends it, not the server): the batches it held fail, and the next export after a short delay
// starts another, which delivers. Before, every export after such a death failed until a restart.
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkerSpanExporter } from "../../src/tracing/worker-exporter.js";
import { startOtlpReceiver, type OtlpReceiver } from "../support/otlp-receiver.js";

/** Ended spans, read back as the batch processor would hand them over. */
function spans(...attributes: Array<Record<string, string>>): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] }).getTracer("test");
  attributes.forEach((a, i) => tracer.startSpan(`span-${i}`, { attributes: a }).end());
  return memory.getFinishedSpans();
}

const exported = (exporter: WorkerSpanExporter, batch: ReadableSpan[]) => new Promise<ExportResult>((resolve) => exporter.export(batch, resolve));

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(() => receiver.close());

describe("the trace export worker", () => {
  it("dies of a batch it cannot hold, not the server; the next export after the delay starts another worker, which delivers", async () => {
    const exporter = new WorkerSpanExporter({ url: `${receiver.url}/v1/traces`, protocol: "http/protobuf", resource: { "service.name": "test" }, scope: { name: "test" } });
    try {
      expect((await exported(exporter, spans({ size: "small" }))).code).toBe(ExportResultCode.SUCCESS);

      // 40 copies of a 4 MB attribute: past the worker's 64 MB heap once decoded and serialized.
      const huge = "x".repeat(4 * 1024 * 1024);
      const died = await exported(exporter, spans(...Array.from({ length: 40 }, () => ({ huge }))));
      expect(died.code).toBe(ExportResultCode.FAILED);
      expect(died.error?.message).toMatch(/export worker/);

      // Within the delay: refused at once, saying why (what the server logs once a minute).
      const meanwhile = await exported(exporter, spans({ when: "meanwhile" }));
      expect([meanwhile.code, meanwhile.error?.message]).toEqual([ExportResultCode.FAILED, died.error?.message]);

      await new Promise((r) => setTimeout(r, 1_100));
      expect((await exported(exporter, spans({ when: "after" }))).code).toBe(ExportResultCode.SUCCESS);
      expect(receiver.spans.filter((s) => s.attributes.when).map((s) => s.attributes.when)).toEqual(["after"]);
    } finally {
      await exporter.shutdown();
    }
  }, 60_000);
});
