// How far V8 lets the old generation grow past what its last full collection kept before it collects
// again (HEAP_GROWTH_PERCENT). Under load Node's HTTP stack promotes each request's objects to the old
// generation, and V8's own factor lets the heap, and the RSS with it, swing widely between
// collections; a smaller factor keeps them flat for a little more CPU (bench/RESULTS.md, "Memory").
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
