// Node's own metrics (prom-client's defaults: event-loop lag, heap, GC, CPU, file descriptors) and
// the build this process runs, as an info metric whose labels are its version and git commit.
import { execFile } from "node:child_process";
import { realpathSync } from "node:fs";
import { promisify } from "node:util";
import { collectDefaultMetrics, Gauge, type Registry } from "prom-client";
import { packageRoot, packageVersion } from "../core/package-root.js";

export interface Build {
  version: string;
  /** The commit of the package's git checkout; `unknown` where it has none (a deployment of the built files). */
  commit: string;
}

/**
 * package.json's version, and the commit git names when the package's folder is the top of a
 * checkout (not a folder inside another repository) and git answers within a second.
 */
export async function currentBuild(): Promise<Build> {
  const version = packageVersion();
  const commit = await promisify(execFile)("git", ["rev-parse", "--show-toplevel", "HEAD"], { cwd: packageRoot, timeout: 1_000 }).then(
    ({ stdout }) => {
      const [top, head] = stdout.trim().split("\n");
      return top && realpathSync(top) === realpathSync(packageRoot) && head && /^[0-9a-f]{40}$/.test(head) ? head : "unknown";
    },
    () => "unknown",
  );
  return { version, commit };
}

export function watchProcess(registry: Registry, build: Build): void {
  collectDefaultMetrics({ register: registry });
  new Gauge({ name: "tenant_api_build_info", help: "1, labelled with the version (package.json) and git commit of the build this process runs.", labelNames: ["version", "commit"], registers: [registry] }).set(build, 1);
}
