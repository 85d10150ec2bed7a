// The baselines: bare Express 5 routes answering `{}` (GET /, and POST / through express.json()),
// started the same way as the server under test (node on compiled JS, same keep-alive), so that
// ratios to them measure what the API adds.
import { createServer } from "node:http";
import express from "express";

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.get("/", (_req, res) => void res.json({}));
// The POST baseline of the spend scenarios: the same body parsed, `{}` answered.
app.post("/", express.json(), (_req, res) => void res.json({}));

const server = createServer(app);
server.keepAliveTimeout = 65_000; // as the server (src/server.ts)
server.listen(Number(process.env.PORT ?? 8090), process.env.HOST ?? "127.0.0.1");
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
