// The guarded JWKS fetcher. The JWKS URL of a JWT listener is typed by an administrator, so this is
// the one place where the server calls out to an address it does not control. Defensive defaults:
// HTTPS only; every address the host name resolves to is checked when the connection is opened
// (after DNS, so a rebinding name cannot slip a private address in between a check and the
// connect), and the connected peer is checked again; no redirects; a connect and a total timeout;
// a response size cap; the content must be a JSON object with a `keys` array.
// `allowInsecure` (JWKS_ALLOW_INSECURE=1, development and tests only) allows `http:` and loopback
// and private addresses; link-local, metadata, multicast and the like stay refused.
import type { LookupAddress } from "node:dns";
import { lookup as dnsLookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import tls from "node:tls";
import { invalidField } from "../core/errors.js";
import { textLength } from "../core/storable-text.js";
import { isOutboundAddressAllowed, parseAddress, type OutboundAddressPolicy } from "./outbound-address.js";

export type JwksFetchErrorCode =
  | "INVALID_URL" // not an absolute URL, credentials in it, too long
  | "INSECURE_URL" // http: without allowInsecure
  | "ADDRESS_REFUSED" // the host is (or resolves to) a refused address
  | "DNS_FAILED" // the host name does not resolve
  | "CONNECT_FAILED" // TCP or TLS failure, connection reset
  | "TIMEOUT"
  | "REDIRECT" // any 3xx: redirects are not followed
  | "HTTP_STATUS" // any other status than 200
  | "TOO_LARGE" // the response exceeds maxBytes
  | "INVALID_CONTENT"; // not UTF-8 JSON, not an object with a `keys` array, or compressed

/** Why a JWKS could not be fetched. Messages name the failure, never the URL's path or query. */
export class JwksFetchError extends Error {
  override name = "JwksFetchError";
  constructor(
    readonly code: JwksFetchErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A JWKS document as fetched: an object with a `keys` array whose entries are not yet checked. */
export interface JwksDocument {
  keys: unknown[];
  [member: string]: unknown;
}

/** Resolves a host name to all its addresses (dns.lookup semantics: /etc/hosts, then DNS). */
export type HostResolver = (hostname: string) => Promise<LookupAddress[]>;

export interface FetchJwksOptions extends OutboundAddressPolicy {
  /** Whole request, from the start to the last body byte. Default 3000 ms. */
  timeoutMs?: number;
  /** DNS plus TCP connect. Default 2000 ms. */
  connectTimeoutMs?: number;
  /** Largest response body read; reading stops beyond it. Default 64 KB. */
  maxBytes?: number;
  /** Host name resolution; defaults to dns.lookup. Tests inject a resolver to simulate DNS answers. */
  resolve?: HostResolver;
  /** Certificate authorities trusted for the JWKS host besides the system's (a private CA; tests, a self-signed certificate). */
  ca?: string | Buffer;
}

export const JWKS_FETCH_DEFAULTS = { timeoutMs: 3_000, connectTimeoutMs: 2_000, maxBytes: 64 * 1024 } as const;
export const MAX_JWKS_URL_LENGTH = 2048;

const USER_AGENT = "tenant-access-api-jwks-fetcher";

const defaultResolve: HostResolver = (hostname) => dnsLookup(hostname, { all: true });

/**
 * The JWKS URL, checked: an absolute `https:` URL (or `http:` with allowInsecure), without
 * credentials, and, when its host is an IP literal, an allowed address (Node does not call the
 * `lookup` hook for IP literals, so they are checked here). The fragment is dropped.
 */
export function parseJwksUrl(raw: string, policy: OutboundAddressPolicy = {}): URL {
  if (typeof raw !== "string" || raw.length === 0 || textLength(raw) > MAX_JWKS_URL_LENGTH) {
    throw new JwksFetchError("INVALID_URL", `the JWKS URL must be an absolute URL of at most ${MAX_JWKS_URL_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new JwksFetchError("INVALID_URL", "the JWKS URL is not an absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new JwksFetchError("INVALID_URL", "the JWKS URL must be an https URL");
  if (url.protocol === "http:" && policy.allowInsecure !== true) throw new JwksFetchError("INSECURE_URL", "the JWKS URL must use https");
  if (url.username || url.password) throw new JwksFetchError("INVALID_URL", "the JWKS URL must not carry credentials");
  if (!url.hostname) throw new JwksFetchError("INVALID_URL", "the JWKS URL has no host");
  // The WHATWG parser has already turned `0x7f.1`, `2130706433` and the like into dotted decimal.
  if (parseAddress(url.hostname) && !isOutboundAddressAllowed(url.hostname, policy)) {
    throw new JwksFetchError("ADDRESS_REFUSED", "the JWKS host is an address the server does not connect to");
  }
  url.hash = "";
  return url;
}

/** Save-time check of a JWKS URL: 400 naming `path` when it would never be fetched. */
export function checkJwksUrl(raw: unknown, path: string, policy: OutboundAddressPolicy = {}): string {
  if (typeof raw !== "string") throw invalidField(path, "must be an https URL", "INVALID_JWKS_URL");
  try {
    return parseJwksUrl(raw, policy).toString();
  } catch (e) {
    if (e instanceof JwksFetchError) throw invalidField(path, e.message.replace(/^the JWKS URL /, ""), "INVALID_JWKS_URL");
    throw e;
  }
}

const familyOf = (family: unknown): 0 | 4 | 6 => (family === 4 || family === "IPv4" ? 4 : family === 6 || family === "IPv6" ? 6 : 0);

/**
 * A `lookup` for http(s).request that resolves the name, refuses the connection when ANY of the
 * addresses is not allowed, and hands Node only checked addresses: the check and the connect use
 * the same answer, so DNS rebinding gets nowhere.
 */
export function guardedLookup(resolve: HostResolver, policy: OutboundAddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        if (found.length === 0) return callback(new JwksFetchError("DNS_FAILED", "the JWKS host name does not resolve"), "");
        if (found.some((a) => !isOutboundAddressAllowed(a.address, policy))) {
          return callback(new JwksFetchError("ADDRESS_REFUSED", "the JWKS host resolves to an address the server does not connect to"), "");
        }
        const family = familyOf(options.family);
        const usable = family === 0 ? found : found.filter((a) => a.family === family);
        const first = usable[0];
        if (!first) return callback(new JwksFetchError("DNS_FAILED", "the JWKS host name has no address of the requested family"), "");
        if (options.all) return callback(null, usable);
        return callback(null, first.address, first.family);
      },
      (cause: unknown) => callback(new JwksFetchError("DNS_FAILED", "the JWKS host name does not resolve", { cause }), ""),
    );
  };
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number`);
  return value;
}

const addressPolicy = (options: FetchJwksOptions): OutboundAddressPolicy => ({
  allowInsecure: options.allowInsecure === true,
  ...(options.exemptAddresses ? { exemptAddresses: options.exemptAddresses } : {}),
});

function download(url: URL, options: FetchJwksOptions): Promise<Buffer> {
  const policy = addressPolicy(options);
  const timeoutMs = positive("timeoutMs", options.timeoutMs ?? JWKS_FETCH_DEFAULTS.timeoutMs);
  const connectTimeoutMs = positive("connectTimeoutMs", options.connectTimeoutMs ?? JWKS_FETCH_DEFAULTS.connectTimeoutMs);
  const maxBytes = positive("maxBytes", options.maxBytes ?? JWKS_FETCH_DEFAULTS.maxBytes);
  const client = url.protocol === "https:" ? https : http;

  return new Promise<Buffer>((resolve, reject) => {
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const settle = () => {
      settled = true;
      for (const t of timers) clearTimeout(t);
    };
    const request = client.request(url, {
      method: "GET",
      ...(options.ca === undefined ? {} : { ca: [...tls.rootCertificates, options.ca.toString()] }),
      agent: false, // a fresh connection, checked at connect; never a pooled one
      lookup: guardedLookup(options.resolve ?? defaultResolve, policy),
      headers: { accept: "application/jwk-set+json, application/json", "accept-encoding": "identity", "user-agent": USER_AGENT },
      maxHeaderSize: 16 * 1024,
      insecureHTTPParser: false,
    });
    const fail = (error: JwksFetchError) => {
      if (settled) return;
      settle();
      request.destroy();
      reject(error);
    };
    timers.push(
      setTimeout(() => fail(new JwksFetchError("TIMEOUT", `the JWKS was not received within ${timeoutMs} ms`)), timeoutMs),
      setTimeout(() => fail(new JwksFetchError("TIMEOUT", `no connection to the JWKS host within ${connectTimeoutMs} ms`)), connectTimeoutMs),
    );
    request.on("socket", (socket) => {
      socket.once("connect", () => {
        clearTimeout(timers[1]);
        // Second line of defence: the peer actually connected to.
        const peer = socket.remoteAddress;
        if (!peer || !isOutboundAddressAllowed(peer, policy)) {
          fail(new JwksFetchError("ADDRESS_REFUSED", "the JWKS host is an address the server does not connect to"));
        }
      });
    });
    request.on("error", (error) => {
      fail(error instanceof JwksFetchError ? error : new JwksFetchError("CONNECT_FAILED", "the JWKS host could not be reached", { cause: error }));
    });
    request.on("response", (response) => {
      const status = response.statusCode ?? 0;
      if (status >= 300 && status < 400) return fail(new JwksFetchError("REDIRECT", `the JWKS URL answered a redirect (${status}); redirects are not followed`));
      if (status !== 200) return fail(new JwksFetchError("HTTP_STATUS", `the JWKS URL answered HTTP ${status}`));
      const encoding = response.headers["content-encoding"];
      if (encoding && encoding.trim().toLowerCase() !== "identity") {
        return fail(new JwksFetchError("INVALID_CONTENT", "the JWKS response is compressed; it must be sent uncompressed"));
      }
      const declared = response.headers["content-length"];
      if (declared !== undefined && Number(declared) > maxBytes) {
        return fail(new JwksFetchError("TOO_LARGE", `the JWKS response exceeds ${maxBytes} bytes`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) return fail(new JwksFetchError("TOO_LARGE", `the JWKS response exceeds ${maxBytes} bytes`));
        chunks.push(chunk);
      });
      response.on("end", () => {
        if (settled) return;
        settle();
        resolve(Buffer.concat(chunks, size));
      });
      response.on("error", (cause) => fail(new JwksFetchError("CONNECT_FAILED", "the JWKS response was cut off", { cause })));
      response.on("close", () => {
        if (!response.complete) fail(new JwksFetchError("CONNECT_FAILED", "the JWKS response was cut off"));
      });
    });
    request.end();
  });
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Checks a fetched body: UTF-8 JSON, an object with a `keys` array. */
export function parseJwksDocument(body: Uint8Array): JwksDocument {
  let value: unknown;
  try {
    value = JSON.parse(strictUtf8.decode(body));
  } catch {
    throw new JwksFetchError("INVALID_CONTENT", "the JWKS response is not JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value) || !Array.isArray((value as { keys?: unknown }).keys)) {
    throw new JwksFetchError("INVALID_CONTENT", "the JWKS response is not an object with a keys array");
  }
  return value as JwksDocument;
}

/** Fetches and checks the JWKS at `url`; every failure is a JwksFetchError. */
export async function fetchJwks(url: string, options: FetchJwksOptions = {}): Promise<JwksDocument> {
  const target = parseJwksUrl(url, addressPolicy(options));
  return parseJwksDocument(await download(target, options));
}
