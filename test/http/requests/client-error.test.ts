// The server's answer to what Node's HTTP parser refuses, on cases a test cannot cheaply make over a
// real connection: a request timeout (408) and a reset connection (not answered, closed).
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../src/core/logger.js";
import { answerClientError } from "../../../src/http/client-error.js";
import { schemaErrors } from "../../support/contract.js";

const answer = answerClientError(createLogger("silent"));
const failure = (code: string) => Object.assign(new Error(code), { code });

function socket() {
  const s = new PassThrough();
  let written = "";
  s.on("data", (d: Buffer) => (written += d.toString()));
  return { s, written: () => written };
}

describe("answerClientError", () => {
  it("answers a request timeout 408 with the Status body and closes", async () => {
    const { s, written } = socket();
    answer(failure("ERR_HTTP_REQUEST_TIMEOUT"), s);
    await new Promise((resolve) => setImmediate(resolve));
    const [head = "", body = ""] = written().split("\r\n\r\n");
    expect(head).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(head).toContain("Connection: close");
    expect(schemaErrors("Status", JSON.parse(body))).toEqual([]);
    expect(body).toContain("REQUEST_TIMEOUT");
    expect(s.writableEnded).toBe(true);
  });

  it("writes nothing on a reset connection and closes it", () => {
    const { s, written } = socket();
    answer(failure("ECONNRESET"), s);
    expect(written()).toBe("");
    expect(s.destroyed).toBe(true);
  });
});
