// Opens the floor's store named by a URL: `sqlite:<path>` or postgres://.
import { openFloorPostgres } from "./floor-postgres.js";
import { openFloorSqlite } from "./floor-sqlite.js";
import type { FloorStore } from "./floor-store.js";

export async function openFloorStore(url: string): Promise<FloorStore> {
  if (url.startsWith("sqlite:")) return openFloorSqlite(url.slice("sqlite:".length));
  if (/^postgres(ql)?:\/\//.test(url)) return openFloorPostgres(url);
  throw new Error(`the floor's database URL must be sqlite:<path> or postgres://, got ${url}`);
}
