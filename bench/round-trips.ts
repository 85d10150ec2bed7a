// The bench's count of PostgreSQL round trips per operation: a server process of its own with
// bench/servers/round-trips.ts preloaded, each operation sent a few times, one request at a time,
// through the load generator, and what the server's pg client sent within each request read back.
import { existsSync, readFileSync } from "node:fs";
import type { RoundTripLine } from "./servers/round-trips.js";
import type { LoadSpec, RequestSpec } from "./load.js";
import type { Driver, NodeProcess } from "./processes.js";
import { percentile, type RoundTrips } from "./report.js";

export interface Operation {
  label: string;
  request: RequestSpec;
  expectStatus: number;
}

/** Requests a second, and for how long, per operation: one connection, so one request at a time. */
const RATE = 10;
const SECONDS = 2;

const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);

/** Statements from BEGIN to COMMIT or ROLLBACK (both counted), and the transactions among `statements`. */
function transactions(statements: readonly string[]): { inTransaction: number; transactions: number } {
  let open = false;
  let inTransaction = 0;
  let count = 0;
  for (const s of statements) {
    if (/^\s*begin\b/i.test(s)) {
      open = true;
      count++;
    }
    if (open) inTransaction++;
    if (/^\s*(commit|rollback)\b/i.test(s)) open = false;
  }
  return { inTransaction, transactions: count };
}

/** One operation's figures from the lines its requests wrote (answers, then statements after them). */
export function summarizeRoundTrips(operation: string, lines: readonly RoundTripLine[]): RoundTrips {
  const answers = lines.filter((l): l is Extract<RoundTripLine, { statements: string[] }> => "statements" in l);
  const after = new Map<number, number>();
  for (const l of lines) if ("after" in l) after.set(l.request, (after.get(l.request) ?? 0) + 1);
  const trips = answers.map((a) => a.statements.length);
  const tx = answers.map((a) => transactions(a.statements));
  const least = Math.min(...trips);
  const most = Math.max(...trips);
  return {
    operation,
    requests: answers.length,
    roundTrips: median(trips),
    inTransaction: median(tx.map((t) => t.inTransaction)),
    transactions: median(tx.map((t) => t.transactions)),
    after: median(answers.map((a) => after.get(a.request) ?? 0)),
    ...(answers.length > 0 && least !== most ? { range: [least, most] as [number, number] } : {}),
  };
}

function readLines(file: string): RoundTripLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RoundTripLine);
}

/**
 * Sends each operation to `server` (started with the preload writing `file`) and answers its round
 * trips; `settleMs` after each, for the work its requests started to finish.
 */
export async function countRoundTrips(driver: Driver, server: NodeProcess, file: string, operations: readonly Operation[], settleMs = 500): Promise<RoundTrips[]> {
  const out: RoundTrips[] = [];
  for (const op of operations) {
    const before = Math.max(0, ...readLines(file).map((l) => l.request));
    const spec: LoadSpec = { origin: server.url, connections: 1, durationSeconds: SECONDS, warmupSeconds: 0, expectStatus: op.expectStatus, rate: RATE, serverPid: server.pid };
    // JWTs signed as they are sent: a few dozen requests.
    const result = await driver.run(spec, op.request.kind === "jwt" ? { ...op.request, pregenerate: 0 } : op.request);
    if (result.errors.unexpectedStatus > 0) throw new Error(`round trips of ${op.label}: answers other than ${op.expectStatus}: ${JSON.stringify(result.statuses)}`);
    await new Promise((r) => setTimeout(r, settleMs));
    out.push(summarizeRoundTrips(op.label, readLines(file).filter((l) => l.request > before)));
  }
  return out;
}
