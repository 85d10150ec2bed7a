// Several server processes on one fresh database, as behind a load balancer: they share nothing but
// the database and the configured secrets key. Started together, so migrations, the signing key and
// the bootstrap admin race and must settle once.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createApiClient, type ApiClient } from "../../src/client/index.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { freePort, serve, type Served } from "./process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface Instances {
  database: TestDatabase;
  instances: Served[];
  /** A client of the bootstrap admin per instance. */
  clients: ApiClient[];
  /** Starts one more instance, configured as the others (after one was killed, as a restart would); it is stopped with them. */
  add(): Promise<{ instance: Served; client: ApiClient }>;
  stop(): Promise<void>;
}

export interface InstanceOptions {
  /** The DATABASE_URL the instances are given for the database made for them, e.g. through a proxy of the test's. */
  reachDatabase?: (url: string) => Promise<string>;
  /** A shell line each instance's process runs first, in its own shell, e.g. `ulimit -n 256`: the server then runs in that shell's place. */
  shell?: string;
}

/** `env`: more configuration, the same for every instance (LOG_LEVEL and SHUTDOWN_DRAIN_SECONDS replace the defaults below). */
export async function startInstances(count: number, admin: { clientId: string; clientSecret: string }, baseUrl: string, env: Record<string, string> = {}, options: InstanceOptions = {}): Promise<Instances> {
  const dir = mkdtempSync(join(tmpdir(), "tenant-instances-"));
  const database = await createTestDatabase(dir);
  const common = {
    LOG_LEVEL: "warn",
    // No balancer in front of them: stopped without a drain, unless the test sets one.
    SHUTDOWN_DRAIN_SECONDS: "0",
    ...env,
    DATABASE_URL: (await options.reachDatabase?.(database.url)) ?? database.url,
    BASE_URL: baseUrl,
    SECRETS_KEY: Buffer.alloc(32, 7).toString("base64url"),
    BOOTSTRAP_CLIENT_ID: admin.clientId,
    BOOTSTRAP_CLIENT_SECRET: admin.clientSecret,
    HOST: "127.0.0.1",
  };
  const start = async () => {
    const port = await freePort();
    // Node itself with tsx's loader, not the tsx command: that one is a parent process relaying
    // signals, and a test that signals an instance must reach the server's own handler. Under a
    // shell line, the shell `exec`s Node: the PID signalled is still the server's.
    const node = [process.execPath, "--import", "tsx", join(root, "src/main.ts")];
    const [command, ...args] = options.shell === undefined ? node : ["sh", "-c", `${options.shell} && exec "$@"`, "sh", ...node];
    return serve({ command: command!, args, url: `http://127.0.0.1:${port}`, probePath: "/readyz", env: { ...common, PORT: String(port) }, timeoutMs: 90_000 });
  };
  const instances = await Promise.all(Array.from({ length: count }, start));
  return {
    database,
    instances,
    clients: instances.map((s) => createApiClient({ baseUrl: s.url, credentials: admin })),
    async add() {
      const instance = await start();
      instances.push(instance);
      return { instance, client: createApiClient({ baseUrl: instance.url, credentials: admin }) };
    },
    async stop() {
      await Promise.all(instances.map((s) => s.stop()));
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
