// The addresses the server listens on: whether a host and port can be listened on (the name
// resolves, the address is one of this machine's, the port is free), checked at start before
// anything is created, so that a mistake is refused naming its variable instead of failing at the
// listen after the database was opened; and how a listening socket is shown.
import { lookup } from "node:dns/promises";
import { createServer, type AddressInfo, type Server } from "node:net";
import { networkInterfaces } from "node:os";

/**
 * A listening socket: the address and port it is bound to (`0.0.0.0:8080`), a URL that reaches it
 * from this machine, and, bound to every address, a URL for each address the machine has now.
 */
export interface BoundAddress {
  listening: string;
  url: string;
  urls?: string[];
}

/** A wildcard address (every address of the machine) is reached from the machine at its loopback address. */
export function boundAddress({ address, port }: AddressInfo): BoundAddress {
  const wildcard = address === "0.0.0.0" || address === "::";
  const listening = `${bracketed(address)}:${port}`;
  if (!wildcard) return { listening, url: `http://${listening}` };
  return { listening, url: `http://127.0.0.1:${port}`, urls: machineAddresses(address === "::").map((a) => `http://${bracketed(a)}:${port}`) };
}

function bracketed(address: string): string {
  return address.includes(":") ? `[${address}]` : address;
}

/** IPv4 ones first; link-local IPv6 ones are left out, as a URL cannot name their interface. */
function machineAddresses(withIpv6: boolean): string[] {
  const all = Object.values(networkInterfaces()).flatMap((entries) => entries ?? []);
  const v4 = all.filter((entry) => entry.family === "IPv4").map((entry) => entry.address);
  const v6 = withIpv6 ? all.filter((entry) => entry.family === "IPv6" && !entry.address.startsWith("fe80:")).map((entry) => entry.address) : [];
  return [...v4, ...v6];
}

/** What an operator is told when another process holds the port: which variables choose another. */
export function portInUse(portVariable: string, hostVariable: string, host: string, port: number): string {
  return `${portVariable} ${port} is in use on ${hostVariable} "${host}" by another process (EADDRINUSE): stop that process, or set ${portVariable} (or ${hostVariable}) to a free one`;
}

/** The variables that chose a listener's port and host, named when it cannot listen. */
export interface ListenerVariables {
  port: string;
  host: string;
}

/** Listens, or fails; a port taken since the start's check fails naming the variables that choose another. */
export async function listenOn(server: Server, port: number, host: string, variables: ListenerVariables): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const refused = (e: NodeJS.ErrnoException) => reject(e.code === "EADDRINUSE" ? new Error(portInUse(variables.port, variables.host, host, port)) : e);
    server.once("error", refused);
    server.listen(port, host, () => {
      server.off("error", refused);
      resolve();
    });
  });
}

/** Why `port` cannot be listened on at `host` (a listenable host), or undefined when it can; port 0 always can. */
export async function whyPortNotListenable(portVariable: string, hostVariable: string, host: string, port: number): Promise<string | undefined> {
  if (port === 0) return undefined;
  const code = await tryListening(port, host);
  if (code === undefined) return undefined;
  if (code === "EADDRINUSE") return portInUse(portVariable, hostVariable, host, port);
  if (code === "EACCES") return `${portVariable} ${port} is a privileged port this process may not listen on (EACCES): choose one from 1024 up`;
  return `${portVariable} ${port} cannot be listened on at ${hostVariable} "${host}" (${code})`;
}

/** Listens on `port` at `host` and closes at once: the error code, or undefined when it listened. */
async function tryListening(port: number, host: string): Promise<string | undefined> {
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once("error", reject);
      probe.listen(port, host, () => resolve());
    });
    return undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code;
  } finally {
    if (probe.listening) await new Promise((resolve) => probe.close(resolve));
  }
}

/** Why nothing can listen on `host` here (e.g. `does not resolve (ENOTFOUND)`), or undefined when it can. */
export async function whyNotListenable(host: string): Promise<string | undefined> {
  let address: string;
  try {
    ({ address } = await lookup(host));
  } catch (e) {
    return `does not resolve to an address (${(e as NodeJS.ErrnoException).code})`;
  }
  // Port 0: the address alone is tried, whatever the port's fate (taken, or privileged).
  const code = await tryListening(0, address);
  if (code === undefined) return undefined;
  const what = address === host ? "is" : `resolves to ${address}, which is`;
  return code === "EADDRNOTAVAIL" ? `${what} not an address of this machine (EADDRNOTAVAIL)` : `${what} an address this process cannot listen on (${code})`;
}
