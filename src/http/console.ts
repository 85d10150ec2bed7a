// Serves the admin console (built by `npm run build` into dist/console) at /console. Everything it
// loads comes from this server: the Content-Security-Policy allows no other origin, so a page that
// tried to load a script, a style or a font from a CDN, or to call another host, would be refused.
// Hashed assets are cached for good; the page itself is revalidated, so a new build shows at once.
import { existsSync } from "node:fs";
import { join } from "node:path";
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { notFound } from "../core/errors.js";

export const CONSOLE_PATH = "/console";

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Headers of a page this server serves to browsers (the console, the docs): its policy, and no sniffing or referrer. */
export function setPageSecurityHeaders(res: Response, csp: string): void {
  res.setHeader("Content-Security-Policy", csp);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
}

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  setPageSecurityHeaders(res, CONSOLE_CSP);
  next();
}

/** The console's routes, mounted at CONSOLE_PATH. `dir` is the build output (index.html, assets/). */
export function consoleRouter(dir: string): Router {
  const router = express.Router({ strict: true });
  router.use(securityHeaders);
  const index = join(dir, "index.html");
  const sendIndex = (_req: Request, res: Response) => {
    if (!existsSync(index)) throw notFound("CONSOLE_NOT_BUILT", "the console is not built: run `npm run build`");
    res.setHeader("Cache-Control", "no-cache");
    res.sendFile(index);
  };
  // Asset names carry a hash of their content (Vite), so a cached copy is never stale.
  router.use(
    "/assets",
    express.static(join(dir, "assets"), { immutable: true, maxAge: "365d", index: false, dotfiles: "deny" }),
    (_req: Request, _res: Response, next: NextFunction) => next(notFound("NOT_FOUND", "no such console asset")),
  );
  router.get("/", sendIndex);
  // The console routes by the URL fragment, so the page is the only document.
  router.get("/index.html", sendIndex);
  return router;
}
