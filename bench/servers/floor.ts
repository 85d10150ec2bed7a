// The floor server of the bench (issue 33): the least a correct spend decision, capture and webhook
// intake do (./floor-app.ts), on SQLite or PostgreSQL, started like the server under test (node on
// compiled JS, same keep-alive). FLOOR_DATABASE_URL: `sqlite:<path>` (a file of its own) or a
// postgres:// URL (its own schema, bench_floor, in that database).
import { createServer } from "node:http";
import { floorApp } from "./floor-app.js";
import { openFloorStore } from "./floor-open.js";

const url = process.env.FLOOR_DATABASE_URL;
if (!url) throw new Error("FLOOR_DATABASE_URL is not set");
const store = await openFloorStore(url);
const server = createServer(floorApp(store));
server.keepAliveTimeout = 65_000; // as the server (src/server.ts)
server.listen(Number(process.env.PORT ?? 8091), process.env.HOST ?? "127.0.0.1");
const stop = () => server.close(() => void store.close().then(() => process.exit(0)));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
