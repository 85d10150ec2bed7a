// The lean `res.json` sends what Express's sent, byte for byte but the Date header, through real
// HTTP: GET and HEAD, small and large bodies, non-ASCII text, a status set before.
import type { AddressInfo } from "node:net";
import { request } from "node:http";
import express, { type Express } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { leanJsonAnswers } from "../../../src/http/json-answer.js";

const BODIES: Record<string, unknown> = {
  object: { list: [{ id: "a1", amount: { currencyCode: "USD", units: "12", nanos: 500000000 } }], nextPageToken: "" },
  unicode: { name: "Zoë — 東京 🚀", escaped: "line\nbreak \"quoted\" \u2028" },
  large: { list: Array.from({ length: 200 }, (_, i) => ({ id: `row-${i}`, note: "x".repeat(i % 17) })) },
  null: null,
  string: "plain",
};

function app(lean: boolean): Express {
  const a = express();
  a.disable("x-powered-by");
  a.set("etag", false);
  if (lean) leanJsonAnswers(a);
  a.all("/:name", (req, res) => {
    if (req.query.status) res.status(Number(req.query.status));
    res.setHeader("X-Request-Id", "r-1");
    res.json(BODIES[req.params.name!]);
  });
  return a;
}

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function send(port: number, method: string, path: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const { date: _date, ...headers } = res.headers;
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

const servers: Array<{ close(): void; port: number }> = [];

beforeAll(async () => {
  for (const lean of [false, true]) {
    const server = app(lean).listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    servers.push({ close: () => server.close(), port: (server.address() as AddressInfo).port });
  }
});

afterAll(() => {
  for (const s of servers) s.close();
});

describe("res.json, lean", () => {
  for (const method of ["GET", "HEAD", "POST"]) {
    for (const name of Object.keys(BODIES)) {
      for (const query of ["", "?status=404"]) {
        it(`${method} ${name}${query}: the same status, headers and bytes as Express's`, async () => {
          const [express, lean] = await Promise.all(servers.map((s) => send(s.port, method, `/${name}${query}`)));
          expect(lean).toEqual(express);
          if (method === "HEAD") expect(lean!.body.length).toBe(0);
          else expect(JSON.parse(lean!.body.toString("utf8"))).toEqual(BODIES[name]);
        });
      }
    }
  }
});
