// The client as a partner gets it: `npm run pack:client` makes a tarball, installed into a scratch
// project of its own. Its dependency tree is the client, openapi-fetch and its helper types only; a consumer's
// TypeScript is checked against the installed declarations (strictly, the declarations included),
// compiled, and run against a real server: a token, a call, a list, and failures with their reason;
// and a notification the server's signature function signed, verified and, changed, refused.
// The package's README sets up a project of its own (ESM, NodeNext): its files, as written, compile
// with the registry's latest TypeScript 5 and its latest release, and the example runs.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signature } from "../../src/automations/notify.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../support/server.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "client-package-"));
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };

let ts: TestServer;
let tarball: string;
beforeAll(async () => {
  ts = await startTestServer();
  const packed = await run("npm", ["run", "--silent", "pack:client"], { cwd: root });
  tarball = packed.stdout.trim().split("\n").at(-1)!;
}, 120_000);
afterAll(async () => {
  await ts?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** The version the registry answers for a spec (`typescript@5`: its newest 5.x). */
async function registryVersion(spec: string): Promise<string> {
  const versions = JSON.parse((await run("npm", ["view", spec, "version", "--json"])).stdout) as string | string[];
  return typeof versions === "string" ? versions : versions.at(-1)!;
}

/** The files a README names and shows: a line opening with `name` and the code block after it. */
const filesOf = (readme: string): Record<string, string> =>
  Object.fromEntries([...readme.matchAll(/^`([\w.]+)`[\s\S]*?\n```(?:json|ts)\n([\s\S]*?)\n```/gm)].map((m) => [m[1]!, `${m[2]!}\n`]));

const CONSUMER = `
import { ApiRequestError, createApiClient, createTokenSource, NotificationVerificationError, paginate, RoleValues, TokenError, unwrap, verifyNotification, type components } from "@tenant/access-api-client";
import { config } from "./config.js";

const api = createApiClient({ baseUrl: config.baseUrl, credentials: config.credentials });
const policy: components["schemas"]["FundPolicy"] = unwrap(await api.GET("/api/v1/funds/policy")).fundPolicy;

const userIds: string[] = [];
for await (const { user } of paginate(async (page_token) => unwrap(await api.GET("/api/v1/users", { params: { query: { page_token, page_size: 10 } } })))) {
  userIds.push(user.id!);
}

const tokens = createTokenSource({ baseUrl: config.baseUrl, credentials: config.credentials });
const token = await tokens.token();

async function failure(call: () => Promise<unknown>) {
  try {
    await call();
    return null;
  } catch (e) {
    if (!(e instanceof ApiRequestError)) throw e;
    return { name: e.name, status: e.status, reason: e.reason, requestId: e.requestId, message: e.message, tokenError: e instanceof TokenError };
  }
}
const notFound = await failure(async () => unwrap(await api.GET("/api/v1/automations/{id}", { params: { path: { id: "no-such-automation" } } })));
const refused = await failure(() => createTokenSource({ baseUrl: config.baseUrl, credentials: { ...config.credentials, clientSecret: "not-the-secret" } }).token());

// A notification as the server signs it, verified without Node's types (WebCrypto), then changed by one byte.
const { secret, ...notification } = config.notification;
const notified = await verifyNotification<{ type: string }>({ secrets: [secret], ...notification });
const changed = await verifyNotification({ secrets: [secret], ...notification, body: notification.body + " " }).catch((e: unknown) => (e instanceof NotificationVerificationError ? e.reason : String(e)));

// Never called: it proves the installed declarations are the contract's, not \`any\`.
export function typeErrors(): void {
  // @ts-expect-error the contract has no such path
  void api.GET("/api/v1/no-such-path");
  // @ts-expect-error a FundPolicy has no such field
  void policy.noSuchField;
  // An answer's enumeration is still a string (openapi-fetch's own answer types would make it an object).
  const period: string | undefined = policy.defaultControls?.period;
  void period;
}

console.log(JSON.stringify({ currencyCode: policy.currencyCode, userIds, tokenLength: token.length, roles: RoleValues, notFound, refused, notified: notified.type, changed }));
`;

describe("npm run pack:client", () => {
  it("makes a tarball that installs with openapi-fetch and its helper types as its only dependencies", async () => {
    expect(tarball).toBe(join(root, "dist/client", `tenant-access-api-client-${version}.tgz`));
    writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "partner-scratch", private: true, type: "module" }));
    // npm 11 resolves a range from the full registry document, which `npm ci` does not cache:
    // --prefer-offline may fetch that metadata; the packages themselves come from the npm cache.
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball], { cwd: scratch });
    const lock = JSON.parse(readFileSync(join(scratch, "package-lock.json"), "utf8")) as { packages: Record<string, unknown> };
    expect(Object.keys(lock.packages).filter((p) => p !== "").sort()).toEqual([
      "node_modules/@tenant/access-api-client",
      "node_modules/openapi-fetch",
      "node_modules/openapi-typescript-helpers", // types only, openapi-fetch's dependency and the client's
    ]);
    const manifest = JSON.parse(readFileSync(join(scratch, "node_modules/@tenant/access-api-client/package.json"), "utf8"));
    expect(manifest).toMatchObject({ name: "@tenant/access-api-client", version, type: "module", peerDependenciesMeta: { jose: { optional: true } } });
    expect(Object.keys(manifest.dependencies)).toEqual(["openapi-fetch", "openapi-typescript-helpers"]);
    expect(Object.keys(manifest.exports)).toEqual([".", "./webhook-sender", "./package.json"]);
  }, 120_000);

  it("type-checks a consumer against the installed package, which then calls a real server", async () => {
    const secret = `whsec_${randomBytes(32).toString("base64")}`;
    const [id, timestamp, body] = ["exe_9Tg3Hs6Wq1Zc4Nv8_tell", 1_795_167_000, JSON.stringify({ type: "card.lost" })] as const;
    const headers = { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": signature([secret], id, timestamp, body) };
    const notification = { secret, headers, body, now: timestamp * 1000 };
    writeFileSync(join(scratch, "config.ts"), `export const config = ${JSON.stringify({ baseUrl: ts.url, credentials: BOOTSTRAP, notification })};\n`);
    writeFileSync(join(scratch, "consumer.ts"), CONSUMER);
    writeFileSync(
      join(scratch, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2023", "DOM"], types: [], strict: true, noUncheckedIndexedAccess: true, skipLibCheck: false, outDir: "out" },
        files: ["consumer.ts"],
      }),
    );
    // The repository's TypeScript, on the scratch project only: its node_modules hold just the installed package.
    await run(join(root, "node_modules/.bin/tsc"), ["-p", join(scratch, "tsconfig.json")], { cwd: scratch }).catch((e: { stdout: string }) => {
      throw new Error(`the consumer does not type-check:\n${e.stdout}`);
    });
    const { stdout } = await run(process.execPath, [join(scratch, "out/consumer.js")], { cwd: scratch });
    const result = JSON.parse(stdout);
    expect(result.currencyCode).toBe("USD");
    expect(result.userIds.length).toBeGreaterThan(0);
    expect(result.tokenLength).toBeGreaterThan(20);
    expect(result.roles).toContain("ROLE_SUPER_ADMIN");
    expect(result.notFound).toMatchObject({ name: "ApiRequestError", status: 404, reason: "AUTOMATION_NOT_FOUND", tokenError: false });
    expect(result.notFound.requestId).toMatch(/\S/);
    expect(result.notFound.message).toBe(`404 AUTOMATION_NOT_FOUND: no automation with this id (request id ${result.notFound.requestId})`);
    expect(result.refused).toMatchObject({ name: "TokenError", status: 401, reason: "INVALID_CLIENT", tokenError: true });
    expect(result.refused.message).toContain("401 INVALID_CLIENT");
    expect(result.refused.message).not.toContain("not-the-secret");
    expect(result.notified).toBe("card.lost");
    expect(result.changed).toBe("NO_MATCHING_SIGNATURE");
  }, 120_000);

  // The README's `npm install --save-dev typescript` gets the registry's latest, which a partner
  // compiles with: each is resolved when the test runs (a new release is tested the day it ships),
  // next to the latest TypeScript 5. A registry out of reach fails the test.
  describe.each(["5", "latest"])("its README's setup, with typescript@%s from the registry", (tag) => {
    let project: string;
    let typescript: string;
    beforeAll(async () => {
      project = mkdtempSync(join(tmpdir(), "client-readme-"));
      typescript = await registryVersion(`typescript@${tag}`);
    }, 60_000);
    afterAll(() => rmSync(project, { recursive: true, force: true }));

    it("compiles as written (ESM, NodeNext, @types/node, strict), as does the consumer, and its example calls a real server", async () => {
      const files = filesOf(readFileSync(join(scratch, "node_modules/@tenant/access-api-client/README.md"), "utf8"));
      expect(Object.keys(files)).toEqual(["package.json", "tsconfig.json", "index.ts"]);
      expect(JSON.parse(files["tsconfig.json"]!).compilerOptions).toMatchObject({ strict: true });
      for (const [name, text] of Object.entries(files)) writeFileSync(join(project, name), text);
      // The README's `npm install`s: the package, @types/node (the version this repository uses, which the npm cache holds) and TypeScript.
      const { version: typesNode } = JSON.parse(readFileSync(join(root, "node_modules/@types/node/package.json"), "utf8")) as { version: string };
      await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball, `@types/node@${typesNode}`, `typescript@${typescript}`], { cwd: project });
      const tsc = join(project, "node_modules/.bin/tsc");
      expect((await run(tsc, ["--version"], { cwd: project })).stdout.trim()).toBe(`Version ${typescript}`);
      await run(tsc, ["-p", join(project, "tsconfig.json")], { cwd: project }).catch((e: { stdout: string }) => {
        throw new Error(`the README's project does not type-check with TypeScript ${typescript}:\n${e.stdout}`);
      });
      // The consumer above (written by the test before), in a browser's configuration: the DOM lib, no @types, the declarations checked.
      await run(tsc, ["-p", join(scratch, "tsconfig.json"), "--noEmit"], { cwd: scratch }).catch((e: { stdout: string }) => {
        throw new Error(`the consumer does not type-check with TypeScript ${typescript}:\n${e.stdout}`);
      });
      const env = { ...process.env, BASE_URL: ts.url, CLIENT_ID: BOOTSTRAP.clientId, CLIENT_SECRET: BOOTSTRAP.clientSecret };
      expect((await run(process.execPath, [join(project, "dist/index.js")], { cwd: project, env })).stdout).toBe("the fund's currency: USD\n");
      const refused = await run(process.execPath, [join(project, "dist/index.js")], { cwd: project, env: { ...env, CLIENT_SECRET: "not-the-secret" } });
      expect(refused.stderr).toBe("check CLIENT_ID and CLIENT_SECRET\n");
    }, 180_000);
  });
});
