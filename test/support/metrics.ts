// Scrapes a server's metrics listener over HTTP and reads the Prometheus text format: each sample
// by its name and labels, the labels in any order.

export interface Scrape {
  status: number;
  contentType: string;
  text: string;
  /** The sample `name` with exactly these labels; undefined when the text has none. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** Every sample of `name`, with its labels. */
  samples(name: string): Array<{ labels: Record<string, string>; value: number }>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

const key = (name: string, labels: Record<string, string>) => `${name}${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;

export function parseMetrics(text: string): Pick<Scrape, "value" | "samples"> {
  const all: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split("\n")) {
    const m = SAMPLE.exec(line);
    if (!m || line.startsWith("#")) continue;
    const labels: Record<string, string> = {};
    for (const [, label, raw] of (m[2] ?? "").matchAll(LABEL)) labels[label!] = raw!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    all.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  const byKey = new Map(all.map((s) => [key(s.name, s.labels), s.value]));
  return {
    value: (name, labels = {}) => byKey.get(key(name, labels)),
    samples: (name) => all.filter((s) => s.name === name).map(({ labels, value }) => ({ labels, value })),
  };
}

export async function scrape(url: string, headers: Record<string, string> = {}): Promise<Scrape> {
  const answer = await fetch(url, { headers });
  const text = await answer.text();
  return { status: answer.status, contentType: answer.headers.get("content-type") ?? "", text, ...parseMetrics(text) };
}
