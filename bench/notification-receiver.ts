// The receiver of the `notify` steps of scenarios 14 and 16, on 127.0.0.1 (the servers run with
// NOTIFICATION_ALLOW_INSECURE=1): `/silent` reads each request and never answers, as a receiver
// that hangs; `/flaky` answers 200, or 503 to every fifth request while `failing` is on.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface NotificationReceiver {
  /** The URL of a path, for a notify step. */
  url(path: "/silent" | "/flaky"): string;
  /** `/flaky`: 503 to every fifth request from now on, or none. */
  setFailing(failing: boolean): void;
  /** `/flaky`'s requests since the last call, and those answered 503. */
  takeCounts(): { requests: number; unavailable: number };
  close(): Promise<void>;
}

/** One request in this many answers 503 while failing. */
const FAIL_EVERY = 5;

export async function startNotificationReceiver(): Promise<NotificationReceiver> {
  let failing = false;
  let requests = 0;
  let unavailable = 0;
  const server = createServer((req, res) => {
    req.resume();
    if (req.url === "/silent") return;
    req.on("end", () => {
      requests++;
      const fail = failing && requests % FAIL_EVERY === 0;
      if (fail) unavailable++;
      res.writeHead(fail ? 503 : 200, { "Content-Type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    setFailing: (on) => void (failing = on),
    takeCounts: () => {
      const counts = { requests, unavailable };
      requests = unavailable = 0;
      return counts;
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
