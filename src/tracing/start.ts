// Traces on or off, as configured (OTEL_*, src/config.ts). Off, OpenTelemetry is not even imported:
// the calls of src/core/spans.ts run the work untraced. On, its Tracer is installed there.
import type { TracingConfig } from "../config.js";
import type { Logger } from "../core/logger.js";
import { packageVersion } from "../core/package-root.js";
import { installTracer } from "../core/spans.js";

/** The service's name in traces unless OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says otherwise. */
export const SERVICE_NAME = "tenant-api";

/**
 * How long a shutdown waits for the spans still queued to be exported: a collector that does not
 * answer delays the exit by this much at most, never up to SHUTDOWN_TIMEOUT_SECONDS.
 */
export const TRACES_FLUSH_MS = 2_000;

export interface Tracing {
  /** Exports the spans still queued (for TRACES_FLUSH_MS at most) and stops tracing. */
  stop(): Promise<void>;
}

export async function startTracing(config: TracingConfig | null, logger: Logger): Promise<Tracing | undefined> {
  if (!config) return undefined;
  const otel = await (await import("./otel.js")).startOpenTelemetry(config, { name: SERVICE_NAME, version: packageVersion() }, logger);
  installTracer(otel.tracer);
  // The collector's address without what a URL may carry of credentials.
  const { origin, pathname } = new URL(config.url);
  logger.info({ msg: "traces on", collector: origin + pathname, protocol: config.protocol, sampler: config.sampler, ratio: config.ratio });
  return {
    async stop() {
      installTracer(undefined);
      let timer: NodeJS.Timeout | undefined;
      const flushed = await Promise.race([
        otel.shutdown().then(() => true, () => false),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), TRACES_FLUSH_MS))),
      ]);
      clearTimeout(timer);
      if (!flushed) logger.warn({ msg: "traces not flushed at shutdown: the collector did not take them in time", waitedMs: TRACES_FLUSH_MS });
    },
  };
}
