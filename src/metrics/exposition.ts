// The registry's text in the format the scraper asks for: OpenMetrics when its Accept header names
// it (Prometheus asks for it first), else Prometheus's text format 0.0.4.
import { Registry, type Metric, type OpenMetricsContentType } from "prom-client";

const OPENMETRICS = "application/openmetrics-text";

export interface Exposition {
  contentType: string;
  body: string;
}

export async function exposition(registry: Registry, accept: string | undefined): Promise<Exposition> {
  if (!accept?.toLowerCase().includes(OPENMETRICS)) return { contentType: registry.contentType, body: await registry.metrics() };
  const open = openMetricsView(registry);
  return { contentType: open.contentType, body: await open.metrics() };
}

/** What the registry keeps of a metric and reads as it writes it (prom-client's typings leave `get` out). */
interface Kept {
  name: string;
  type: string;
  get(): Promise<{ name: string }>;
}

/**
 * An OpenMetrics registry over the same metrics. prom-client writes a counter in OpenMetrics by
 * renaming it in place (the family's name without `_total`), after which the Prometheus text would
 * lose the suffix: here each counter is written through a renamed view, made for the scrape.
 */
function openMetricsView(registry: Registry): Registry<OpenMetricsContentType> {
  const open = new Registry<OpenMetricsContentType>();
  open.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  for (const kept of registry.getMetricsAsArray() as unknown as Kept[]) {
    if (kept.type !== "counter") {
      open.registerMetric(kept as unknown as Metric);
      continue;
    }
    const family = kept.name.replace(/_total$/, "");
    const view: Kept = { name: family, type: kept.type, get: async () => ({ ...(await kept.get()), name: family }) };
    open.registerMetric(view as unknown as Metric);
  }
  return open;
}
