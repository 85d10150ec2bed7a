// Preloaded into a server process (`node --import`) by the bench's round-trip count: each HTTP
// request runs in an AsyncLocalStorage context of its own, and the statements the pg client sends
// within it are appended to BENCH_ROUND_TRIPS_FILE as JSON lines: one per request when its answer is
// sent, then one per statement that context sends after it (e.g. the execution an accepted webhook
// event started). Statements of no request (pollers) are not recorded.
import { AsyncLocalStorage } from "node:async_hooks";
import { appendFileSync } from "node:fs";
import { IncomingMessage, Server, type ServerResponse } from "node:http";
import { watchPgQueries } from "./pg-queries.js";

/** A line of the file. */
export type RoundTripLine = { request: number; method: string; path: string; status: number; statements: string[] } | { request: number; after: string };

interface Context {
  request: number;
  answered: boolean;
  statements: string[];
}

const file = process.env.BENCH_ROUND_TRIPS_FILE;
if (!file) throw new Error("BENCH_ROUND_TRIPS_FILE is not set");
const contexts = new AsyncLocalStorage<Context>();
const CONTEXT = Symbol("round-trip context");
const write = (line: RoundTripLine) => appendFileSync(file, `${JSON.stringify(line)}\n`);
let requests = 0;

watchPgQueries((_client, text) => {
  const context = contexts.getStore();
  if (!context) return;
  if (context.answered) write({ request: context.request, after: text });
  else context.statements.push(text);
});

// Body parsers read the request through stream events, which run in the socket's context: the
// request's own events are run in its context too.
const emitMessage = IncomingMessage.prototype.emit;
IncomingMessage.prototype.emit = function (this: IncomingMessage & { [CONTEXT]?: Context }, ...args: Parameters<typeof emitMessage>) {
  const context = this[CONTEXT];
  return context ? contexts.run(context, () => emitMessage.apply(this, args)) : emitMessage.apply(this, args);
} as typeof emitMessage;

const emitServer = Server.prototype.emit;
Server.prototype.emit = function (this: Server, ...args: Parameters<typeof emitServer>) {
  const [event, req, res] = args as unknown as [string, (IncomingMessage & { [CONTEXT]?: Context }) | undefined, ServerResponse | undefined];
  if (event !== "request" || !req || !res) return emitServer.apply(this, args);
  const context: Context = { request: ++requests, answered: false, statements: [] };
  req[CONTEXT] = context;
  res.once("finish", () => {
    context.answered = true;
    write({ request: context.request, method: req.method ?? "", path: (req.url ?? "").split("?")[0] ?? "", status: res.statusCode, statements: context.statements });
  });
  return contexts.run(context, () => emitServer.apply(this, args));
} as typeof emitServer;
