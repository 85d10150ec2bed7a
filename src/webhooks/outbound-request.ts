// Requests the server makes to a URL an administrator typed: the JWKS of a JWT listener
// (jwks-fetch.ts) and automations' `notify` steps. The one place where the server calls out to an
// address it does not control, with defensive defaults: HTTPS only; every address the host name
// resolves to checked when the connection opens (after DNS, so a rebinding name cannot slip a
// private address in), and the connected peer checked again; no redirects; a connect and a total
// timeout; a cap on the body read. docs/automations.md, "Outbound notifications".
import type { LookupAddress } from "node:dns";
import { lookup as dnsLookup } from "node:dns/promises";
import http, { type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import tls from "node:tls";
import { parseAddress } from "../core/ip-address.js";
import { textLength } from "../core/storable-text.js";
import { isOutboundAddressAllowed, type OutboundAddressPolicy } from "./outbound-address.js";

export type OutboundErrorCode =
  | "INVALID_URL" // not an absolute URL, credentials in it, too long
  | "INSECURE_URL" // http: without allowInsecure
  | "ADDRESS_REFUSED" // the host is (or resolves to) a refused address
  | "DNS_FAILED" // the host name does not resolve
  | "CONNECT_FAILED" // TCP or TLS failure, connection reset, a response cut off
  | "TIMEOUT"
  | "TOO_LARGE"; // the response exceeds the bytes read, when that is a failure

/** Why an outbound request failed. Messages name the failure, never the URL's path or query. */
export class OutboundError<Code extends string = OutboundErrorCode> extends Error {
  override name = "OutboundError";
  constructor(
    readonly code: Code,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** What a caller calls out to: how messages name it, and the errors (of its own class) it throws. */
export interface OutboundSubject {
  /** As messages name it: `JWKS` gives "the JWKS URL must use https". */
  noun: string;
  error(code: OutboundErrorCode, message: string, options?: { cause?: unknown }): OutboundError<string>;
}

/** Resolves a host name to all its addresses (dns.lookup semantics: /etc/hosts, then DNS). */
export type HostResolver = (hostname: string) => Promise<LookupAddress[]>;

export interface OutboundOptions extends OutboundAddressPolicy {
  /** Host name resolution; defaults to dns.lookup. Tests inject a resolver to simulate DNS answers. */
  resolve?: HostResolver;
  /** Certificate authorities trusted besides the system's (a private CA; tests, a self-signed certificate). */
  ca?: string | Buffer;
}

export const MAX_OUTBOUND_URL_LENGTH = 2048;

const defaultResolve: HostResolver = (hostname) => dnsLookup(hostname, { all: true });

export const addressPolicy = (options: OutboundAddressPolicy): OutboundAddressPolicy => ({
  allowInsecure: options.allowInsecure === true,
  ...(options.exemptAddresses ? { exemptAddresses: options.exemptAddresses } : {}),
});

/**
 * The URL, checked: an absolute `https:` URL (or `http:` with allowInsecure), without credentials,
 * and, when its host is an IP literal, an allowed address (Node does not call the `lookup` hook for
 * IP literals, so they are checked here). The fragment is dropped.
 */
export function parseOutboundUrl(raw: string, policy: OutboundAddressPolicy, subject: OutboundSubject): URL {
  const fail = (code: OutboundErrorCode, message: string) => subject.error(code, `the ${subject.noun} ${message}`);
  if (typeof raw !== "string" || raw.length === 0 || textLength(raw) > MAX_OUTBOUND_URL_LENGTH) {
    throw fail("INVALID_URL", `URL must be an absolute URL of at most ${MAX_OUTBOUND_URL_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw fail("INVALID_URL", "URL is not an absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw fail("INVALID_URL", "URL must be an https URL");
  if (url.protocol === "http:" && policy.allowInsecure !== true) throw fail("INSECURE_URL", "URL must use https");
  if (url.username || url.password) throw fail("INVALID_URL", "URL must not carry credentials");
  if (!url.hostname) throw fail("INVALID_URL", "URL has no host");
  // The WHATWG parser has already turned `0x7f.1`, `2130706433` and the like into dotted decimal.
  if (parseAddress(url.hostname) && !isOutboundAddressAllowed(url.hostname, policy)) {
    throw fail("ADDRESS_REFUSED", "host is an address the server does not connect to");
  }
  url.hash = "";
  return url;
}

const familyOf = (family: unknown): 0 | 4 | 6 => (family === 4 || family === "IPv4" ? 4 : family === 6 || family === "IPv6" ? 6 : 0);

/**
 * A `lookup` for http(s).request that resolves the name, refuses the connection when ANY of the
 * addresses is not allowed, and hands Node only checked addresses: the check and the connect use
 * the same answer, so DNS rebinding gets nowhere.
 */
export function guardedLookup(subject: OutboundSubject, resolve: HostResolver, policy: OutboundAddressPolicy): LookupFunction {
  const { noun } = subject;
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        if (found.length === 0) return callback(subject.error("DNS_FAILED", `the ${noun} host name does not resolve`), "");
        if (found.some((a) => !isOutboundAddressAllowed(a.address, policy))) {
          return callback(subject.error("ADDRESS_REFUSED", `the ${noun} host resolves to an address the server does not connect to`), "");
        }
        const family = familyOf(options.family);
        const usable = family === 0 ? found : found.filter((a) => a.family === family);
        const first = usable[0];
        if (!first) return callback(subject.error("DNS_FAILED", `the ${noun} host name has no address of the requested family`), "");
        if (options.all) return callback(null, usable);
        return callback(null, first.address, first.family);
      },
      (cause: unknown) => callback(subject.error("DNS_FAILED", `the ${noun} host name does not resolve`, { cause }), ""),
    );
  };
}

export interface OutboundRequest {
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: Buffer;
  /** Whole request, from the start to the last body byte read. */
  timeoutMs: number;
  /** DNS plus TCP connect. */
  connectTimeoutMs: number;
  /** Most response body bytes read. */
  maxBytes: number;
  /** Past maxBytes: a TOO_LARGE failure, or the first maxBytes answered (`truncated`) and the rest left unread. */
  overflow: "fail" | "truncate";
  /** Refuses a response on its status line and headers, before its body is read. */
  refuse?: (response: IncomingMessage) => Error | undefined;
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body went on past maxBytes; `body` is its start. */
  truncated: boolean;
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number`);
  return value;
}

/** One request to a URL checked by parseOutboundUrl; every failure is an error of `subject`. */
export function guardedRequest(url: URL, subject: OutboundSubject, request: OutboundRequest, options: OutboundOptions): Promise<OutboundResponse> {
  const { noun } = subject;
  const policy = addressPolicy(options);
  const timeoutMs = positive("timeoutMs", request.timeoutMs);
  const connectTimeoutMs = positive("connectTimeoutMs", request.connectTimeoutMs);
  const maxBytes = positive("maxBytes", request.maxBytes);
  const client = url.protocol === "https:" ? https : http;

  return new Promise<OutboundResponse>((resolve, reject) => {
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const settle = () => {
      settled = true;
      for (const t of timers) clearTimeout(t);
    };
    const outgoing = client.request(url, {
      method: request.method,
      ...(options.ca === undefined ? {} : { ca: [...tls.rootCertificates, options.ca.toString()] }),
      agent: false, // a fresh connection, checked at connect; never a pooled one
      lookup: guardedLookup(subject, options.resolve ?? defaultResolve, policy),
      headers: request.body === undefined ? request.headers : { ...request.headers, "content-length": String(request.body.length) },
      maxHeaderSize: 16 * 1024,
      insecureHTTPParser: false,
    });
    const fail = (error: Error) => {
      if (settled) return;
      settle();
      outgoing.destroy();
      reject(error);
    };
    const answer = (response: OutboundResponse) => {
      if (settled) return;
      settle();
      resolve(response);
    };
    timers.push(
      setTimeout(() => fail(subject.error("TIMEOUT", `the ${noun} host did not answer within ${timeoutMs} ms`)), timeoutMs),
      setTimeout(() => fail(subject.error("TIMEOUT", `no connection to the ${noun} host within ${connectTimeoutMs} ms`)), connectTimeoutMs),
    );
    outgoing.on("socket", (socket) => {
      socket.once("connect", () => {
        clearTimeout(timers[1]);
        // Second line of defence: the peer actually connected to.
        const peer = socket.remoteAddress;
        if (!peer || !isOutboundAddressAllowed(peer, policy)) {
          fail(subject.error("ADDRESS_REFUSED", `the ${noun} host is an address the server does not connect to`));
        }
      });
    });
    outgoing.on("error", (error) => {
      // A lookup failure arrives as the error the lookup made (of the subject's class).
      fail(error instanceof OutboundError ? error : subject.error("CONNECT_FAILED", `the ${noun} host could not be reached`, { cause: error }));
    });
    outgoing.on("response", (response) => {
      const refused = request.refuse?.(response);
      if (refused) return fail(refused);
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (truncated: boolean) => {
        answer({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks, Math.min(size, maxBytes)), truncated });
        if (truncated) outgoing.destroy(); // the rest is not read
      };
      response.on("data", (chunk: Buffer) => {
        if (settled) return;
        const room = maxBytes - size;
        size += chunk.length;
        if (size <= maxBytes) return void chunks.push(chunk);
        if (request.overflow === "fail") return fail(subject.error("TOO_LARGE", `the ${noun} response exceeds ${maxBytes} bytes`));
        chunks.push(chunk.subarray(0, room));
        done(true);
      });
      response.on("end", () => done(false));
      response.on("error", (cause) => fail(subject.error("CONNECT_FAILED", `the ${noun} response was cut off`, { cause })));
      response.on("close", () => {
        if (!response.complete) fail(subject.error("CONNECT_FAILED", `the ${noun} response was cut off`));
      });
    });
    outgoing.end(request.body);
  });
}
