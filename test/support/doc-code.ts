// Running the code the documentation shows, as a reader runs it: shell code in bash with the real
// curl, each request's status and body recorded on the way, and typed-client programs typechecked
// and run by tsx against the client's sources as the package's entry points. Shared by the tests of
// the reference's code samples and of its guides.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runToEnd, type RunResult } from "./process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** A credential and an access token of it, as the environment variables the documentation reads. */
export interface Caller {
  CLIENT_ID: string;
  CLIENT_SECRET: string;
  TOKEN: string;
}

export async function callerOf(baseUrl: string, user: { clientId: string; clientSecret: string }): Promise<Caller> {
  const answer = await fetch(`${baseUrl}/auth/v1/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: user.clientId, client_secret: user.clientSecret }),
  });
  return { CLIENT_ID: user.clientId, CLIENT_SECRET: user.clientSecret, TOKEN: ((await answer.json()) as { access_token: string }).access_token };
}

/**
 * A bash function that stands in for curl: it runs the real one, keeps each request's status and
 * body as `<n>.status` and `<n>.body` in the folder `$RECORDS` (numbered in order, `count` holding
 * the last number: a file, so that requests made in `$(...)` count too), and prints the body as curl
 * would. The code it runs must not redirect curl's output itself (`-o`, `-w`).
 */
export const RECORDING_CURL = [
  `curl() {`,
  `  local n=$(( $(cat "$RECORDS/count" 2>/dev/null || echo 0) + 1 ))`,
  `  echo "$n" > "$RECORDS/count"`,
  `  command curl -sS -o "$RECORDS/$n.body" -w '%{http_code}' "$@" > "$RECORDS/$n.status"`,
  `  local code=$?`,
  `  cat "$RECORDS/$n.body" 2>/dev/null`,
  `  return $code`,
  `}`,
].join("\n");

/** A request the recording curl made: its status (0 when curl got no answer) and its body, parsed when it is JSON (after the headers of `-i`). */
export interface RecordedRequest {
  status: number;
  body: unknown;
}

/** How many requests the recording curl has made into `records`. */
export const recordedCount = (records: string): number => (existsSync(join(records, "count")) ? Number(readFileSync(join(records, "count"), "utf8")) : 0);

/** The requests numbered `from` + 1 to `to` of `records`. */
export function recordedRequests(records: string, from = 0, to = recordedCount(records)): RecordedRequest[] {
  const requests: RecordedRequest[] = [];
  for (let n = from + 1; n <= to; n++) {
    const read = (ext: string) => (existsSync(join(records, `${n}.${ext}`)) ? readFileSync(join(records, `${n}.${ext}`), "utf8") : "");
    const raw = read("body");
    const text = /^HTTP\/[\d.]+ \d{3}/.test(raw) ? raw.slice(raw.indexOf("\r\n\r\n") + 4) : raw;
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    requests.push({ status: Number(read("status")) || 0, body });
  }
  return requests;
}

/** Makes `dir` a TypeScript project whose files import the client package by its name (as scripts/pack-client.mjs packs it). */
export function writeClientProject(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      extends: join(root, "tsconfig.json"),
      compilerOptions: {
        noEmit: true,
        rootDir: "/",
        typeRoots: [join(root, "node_modules/@types")],
        paths: {
          "@tenant/access-api-client": [join(root, "src/client/index.ts")],
          "@tenant/access-api-client/webhook-sender": [join(root, "src/client/webhook-sender.ts")],
        },
      },
      include: [join(dir, "*.ts")],
    }),
  );
}

/** One tsc run over every program of the project. */
export const typecheckClientProject = (dir: string): Promise<RunResult> => runToEnd(join(root, "node_modules/.bin/tsc"), ["-p", join(dir, "tsconfig.json")], {}, { timeoutMs: 120_000 });

/** Runs one program of the project with tsx, in the project's folder. */
export const runClientProgram = (dir: string, file: string, env: NodeJS.ProcessEnv): Promise<RunResult> =>
  runToEnd(join(root, "node_modules/.bin/tsx"), ["--tsconfig", join(dir, "tsconfig.json"), join(dir, file)], env, { cwd: dir, timeoutMs: 30_000 });
