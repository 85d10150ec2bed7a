// Preloaded (`--import`) into a process by a test: writes a line to stderr the first time the
// process enables an AsyncLocalStorage or an async hook, and at exit when an OpenTelemetry context
// manager was registered globally. On Node 20 an enabled AsyncLocalStorage (OpenTelemetry's Node
// context manager is one) makes Node call a hook at every promise the process creates, traced or
// not: tracing must never enable one (src/core/spans.ts). Plain JavaScript: it loads before tsx.
import { createRequire, syncBuiltinESMExports } from "node:module";

const MARK = "async-hook-probe:";
const hooks = createRequire(import.meta.url)("node:async_hooks");
const reported = new Set();

function report(what) {
  if (reported.has(what)) return;
  reported.add(what);
  process.stderr.write(`${MARK} ${what} enabled\n${new Error().stack}\n`);
}

const { createHook } = hooks;
hooks.createHook = (callbacks) => {
  const hook = createHook(callbacks);
  const enable = hook.enable;
  hook.enable = function (...args) {
    report("an async hook");
    return enable.apply(this, args);
  };
  return hook;
};
// The ESM view of node:async_hooks (`import { createHook }`) sees the wrapper too.
syncBuiltinESMExports();

// Every way an AsyncLocalStorage gets enabled passes through one of these.
for (const method of ["run", "enterWith"]) {
  const original = hooks.AsyncLocalStorage.prototype[method];
  hooks.AsyncLocalStorage.prototype[method] = function (...args) {
    report("an AsyncLocalStorage");
    return original.apply(this, args);
  };
}

process.on("exit", () => {
  if (globalThis[Symbol.for("opentelemetry.js.api.1")]?.context) report("an OpenTelemetry context manager");
});

process.stderr.write(`${MARK} armed\n`);
