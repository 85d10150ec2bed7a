// The guarded JWKS fetcher: the JWKS URL of a JWT listener, typed by an administrator, fetched
// through the guarded outbound request (./outbound-request.ts: HTTPS only, every address checked at
// connect, no redirects, timeouts, a size cap); the content must be a JSON object with a `keys`
// array. `allowInsecure` (JWKS_ALLOW_INSECURE=1, development and tests only) allows `http:` and
// loopback and private addresses; link-local, metadata and the like stay refused.
import { invalidField } from "../core/errors.js";
import type { OutboundAddressPolicy } from "./outbound-address.js";
import { addressPolicy, guardedLookup as guardedLookupOf, guardedRequest, MAX_OUTBOUND_URL_LENGTH, OutboundError, parseOutboundUrl, type HostResolver, type OutboundOptions, type OutboundSubject } from "./outbound-request.js";

export type { HostResolver } from "./outbound-request.js";

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
export class JwksFetchError extends OutboundError<JwksFetchErrorCode> {
  override name = "JwksFetchError";
}

/** A JWKS document as fetched: an object with a `keys` array whose entries are not yet checked. */
export interface JwksDocument {
  keys: unknown[];
  [member: string]: unknown;
}

export interface FetchJwksOptions extends OutboundOptions {
  /** Whole request, from the start to the last body byte. Default 3000 ms. */
  timeoutMs?: number;
  /** DNS plus TCP connect. Default 2000 ms. */
  connectTimeoutMs?: number;
  /** Largest response body read; reading stops beyond it. Default 64 KB. */
  maxBytes?: number;
}

export const JWKS_FETCH_DEFAULTS = { timeoutMs: 3_000, connectTimeoutMs: 2_000, maxBytes: 64 * 1024 } as const;
export const MAX_JWKS_URL_LENGTH = MAX_OUTBOUND_URL_LENGTH;

const USER_AGENT = "tenant-access-api-jwks-fetcher";

const JWKS: OutboundSubject = { noun: "JWKS", error: (code, message, options) => new JwksFetchError(code, message, options) };

/**
 * The JWKS URL, checked: an absolute `https:` URL (or `http:` with allowInsecure), without
 * credentials, and, when its host is an IP literal, an allowed address. The fragment is dropped.
 */
export function parseJwksUrl(raw: string, policy: OutboundAddressPolicy = {}): URL {
  return parseOutboundUrl(raw, policy, JWKS);
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

/** The guarded `lookup` of JWKS fetches (outbound-request.ts), failing with JwksFetchError. */
export const guardedLookup = (resolve: HostResolver, policy: OutboundAddressPolicy) => guardedLookupOf(JWKS, resolve, policy);

/** Refuses, before its body is read, a response that cannot be a JWKS. */
function refuseResponse(maxBytes: number) {
  return (response: { statusCode?: number; headers: Record<string, string | string[] | undefined> }): JwksFetchError | undefined => {
    const status = response.statusCode ?? 0;
    if (status >= 300 && status < 400) return new JwksFetchError("REDIRECT", `the JWKS URL answered a redirect (${status}); redirects are not followed`);
    if (status !== 200) return new JwksFetchError("HTTP_STATUS", `the JWKS URL answered HTTP ${status}`);
    const encoding = response.headers["content-encoding"];
    if (typeof encoding === "string" && encoding.trim().toLowerCase() !== "identity") {
      return new JwksFetchError("INVALID_CONTENT", "the JWKS response is compressed; it must be sent uncompressed");
    }
    const declared = response.headers["content-length"];
    if (declared !== undefined && Number(declared) > maxBytes) return new JwksFetchError("TOO_LARGE", `the JWKS response exceeds ${maxBytes} bytes`);
    return undefined;
  };
}

async function download(url: URL, options: FetchJwksOptions): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? JWKS_FETCH_DEFAULTS.maxBytes;
  const response = await guardedRequest(
    url,
    JWKS,
    {
      method: "GET",
      headers: { accept: "application/jwk-set+json, application/json", "accept-encoding": "identity", "user-agent": USER_AGENT },
      timeoutMs: options.timeoutMs ?? JWKS_FETCH_DEFAULTS.timeoutMs,
      connectTimeoutMs: options.connectTimeoutMs ?? JWKS_FETCH_DEFAULTS.connectTimeoutMs,
      maxBytes,
      overflow: "fail",
      refuse: refuseResponse(maxBytes),
    },
    options,
  );
  return response.body;
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
