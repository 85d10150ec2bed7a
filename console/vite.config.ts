// Builds the admin console (console/) into dist/console, served by the server at /console.
// Everything is bundled: the page loads nothing from any other origin (the server's CSP forbids it).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: here,
  base: "/console/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/console", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    // No data: URLs or inline scripts: every asset is a file of its own under /console/assets.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
