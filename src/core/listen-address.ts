// The addresses the server listens on: whether a host can be listened on (its name resolves, and
// the address is one of this machine's), checked at start before anything is created, so that a
// mistyped HOST is refused naming its variable instead of failing at the listen after the database
// was opened; and how a listening socket is shown.
import { lookup } from "node:dns/promises";
import { createServer, type AddressInfo } from "node:net";

/** A listening socket: the address and port it is bound to (`0.0.0.0:8080`), and a URL that reaches it from this machine. */
export interface BoundAddress {
  listening: string;
  url: string;
}

/** A wildcard address (every address of the machine) is reached from the machine at its loopback address. */
export function boundAddress({ address, port }: AddressInfo): BoundAddress {
  const host = address.includes(":") ? `[${address}]` : address;
  const local = address === "0.0.0.0" || address === "::" ? "127.0.0.1" : host;
  return { listening: `${host}:${port}`, url: `http://${local}:${port}` };
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
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once("error", reject);
      probe.listen(0, address, () => resolve());
    });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const what = address === host ? "is" : `resolves to ${address}, which is`;
    return code === "EADDRNOTAVAIL" ? `${what} not an address of this machine (EADDRNOTAVAIL)` : `${what} an address this process cannot listen on (${code})`;
  } finally {
    if (probe.listening) await new Promise((resolve) => probe.close(resolve));
  }
  return undefined;
}
