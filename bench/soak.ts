// --soak: a steady HMAC intake for a while, the server's RSS sampled every few seconds meanwhile.
import type { LoadSpec, RequestSpec } from "./load.js";
import type { Driver, NodeProcess } from "./processes.js";
import type { Soak } from "./report.js";

/** About sixty samples, no closer than a second apart nor further than five. */
const sampleEveryMs = (seconds: number) => Math.min(5_000, Math.max(1_000, (seconds * 1000) / 60));

export async function soak(driver: Driver, server: NodeProcess, spec: LoadSpec, request: RequestSpec): Promise<Soak> {
  const rate = spec.rate ?? Number.NaN;
  const started = performance.now();
  const samples: Soak["samples"] = [];
  const sample = () => samples.push({ seconds: (performance.now() - started) / 1000, rssMiB: server.rssMiB() });
  sample();
  const timer = setInterval(sample, sampleEveryMs(spec.durationSeconds));
  try {
    await driver.run(spec, request);
  } finally {
    clearInterval(timer);
  }
  sample();
  return { rate, seconds: spec.durationSeconds, samples };
}
