// How far V8 lets the old generation grow past what survived its last full collection before it
// collects again. V8 picks a factor of up to 4 by itself; under the intake's load, Node's HTTP stack
// promotes each request's objects to the old generation (a bare Express route does too: 3 to 5 MB
// per young collection in the bench), so the server's heap swung between about 100 and 166 MiB over
// a live 40 to 55 MiB, and its RSS with it. At 1.5 the RSS stays about 175 MiB; the cheapest read
// costs about 8% more CPU, the others no measurable more (bench/RESULTS.md, "Memory").
import { setFlagsFromString } from "node:v8";

/** The default growth: 50% past the live heap. */
export const DEFAULT_HEAP_GROWTH_PERCENT = 50;

/**
 * Sets V8's growth factor to 1 + percent/100 for this process; 0 leaves V8's own heuristics. A
 * process-wide setting: only the process's entry point (main.ts) calls it, never a library.
 */
export function limitHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
