// Logs never carry a request body: body-parser attaches the raw body to its errors, and a token
// request's body holds a client secret.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/core/logger.js";

describe("the logger", () => {
  it("logs an error without the body attached to it", async () => {
    const out = new PassThrough();
    let text = "";
    out.on("data", (d: Buffer) => (text += d.toString()));
    const err = Object.assign(new Error("too many parameters"), { type: "parameters.too.many", body: "grant_type=client_credentials&client_secret=s3cret-value" });
    createLogger("info", out).error({ msg: "internal error", err });
    await new Promise((r) => setImmediate(r));
    expect(text).toContain("too many parameters");
    expect(text).not.toContain("s3cret-value");
  });
});
