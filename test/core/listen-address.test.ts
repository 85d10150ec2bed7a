// How a listening socket is shown, and a port taken after the start's check: the listen fails
// naming the variables that choose another, not with the bare EADDRINUSE.
import { createServer, type AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import { describe, expect, it } from "vitest";
import { boundAddress, listenOn } from "../../src/core/listen-address.js";

const ipv4 = () =>
  Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .filter((entry) => entry.family === "IPv4")
    .map((entry) => entry.address);

describe("boundAddress", () => {
  it("an address: itself, with no list", () => {
    expect(boundAddress({ address: "127.0.0.1", port: 8080, family: "IPv4" })).toEqual({ listening: "127.0.0.1:8080", url: "http://127.0.0.1:8080" });
    expect(boundAddress({ address: "::1", port: 8080, family: "IPv6" })).toEqual({ listening: "[::1]:8080", url: "http://[::1]:8080" });
  });

  it("every IPv4 address (0.0.0.0): a URL for each of the machine's IPv4 addresses, loopback included", () => {
    const bound = boundAddress({ address: "0.0.0.0", port: 8080, family: "IPv4" });
    expect(bound).toMatchObject({ listening: "0.0.0.0:8080", url: "http://127.0.0.1:8080" });
    expect(bound.urls).toEqual(ipv4().map((address) => `http://${address}:8080`));
    expect(bound.urls).toContain("http://127.0.0.1:8080");
  });

  it("every address (::): the IPv4 ones first, then the IPv6 ones a URL can name", () => {
    const urls = boundAddress({ address: "::", port: 8080, family: "IPv6" }).urls ?? [];
    expect(urls.slice(0, ipv4().length)).toEqual(ipv4().map((address) => `http://${address}:8080`));
    for (const url of urls.slice(ipv4().length)) expect(url).toMatch(/^http:\/\/\[(?!fe80:)[0-9a-f:]+\]:8080$/);
  });
});

describe("listenOn", () => {
  it("a port another server holds: an error naming the port's and host's variables", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const { port } = holder.address() as AddressInfo;
    const late = createServer();
    try {
      await expect(listenOn(late, port, "127.0.0.1", { port: "PORT", host: "HOST" })).rejects.toThrow(
        `PORT ${port} is in use on HOST "127.0.0.1" by another process (EADDRINUSE): stop that process, or set PORT (or HOST) to a free one`,
      );
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
    await listenOn(late, port, "127.0.0.1", { port: "PORT", host: "HOST" });
    expect((late.address() as AddressInfo).port).toBe(port);
    await new Promise((resolve) => late.close(resolve));
  });
});
