// PostgreSQL round trips of the writes of one controls row (SetLimit, Suspend, Unsuspend, SetExtension,
// my SetLimit, AppCap Set), counted at the pg client as the server (in this process) sends them:
// the live row read with the user's check and the fund currency (one statement), then the guarded
// write (one call of write_controls_row: the locks, the checks that nothing changed, the write).
// Other connections (the workers) query meanwhile: only the connections that touched the row count,
// less the change watch's polls, which a pool may send on them too.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import type { Answer } from "./helpers.js";
import { amount, newAppId, watchingQueries } from "../spends/helpers.js";

const watched = watchingQueries();
/** The connections that touched a controls row. */
const TOUCHING_ROW = /subject_app_limits|app_caps|write_controls_row/;

const later = () => new Date(Date.now() + 86_400_000).toISOString();

describe.skipIf(testDialect() !== "postgres")("the round trips of a controls row's write (PostgreSQL)", () => {

  const cases: { what: string; setUp?: (app: string) => Promise<Answer>; write: (app: string) => Promise<Answer> }[] = [
    { what: "SetLimit creating the row", write: (app) => watched.server.admin.setLimit(watched.server.subject.userId, app, { limit: amount("5") }) },
    {
      what: "SetLimit changing the row",
      setUp: (app) => watched.server.admin.setLimit(watched.server.subject.userId, app, { limit: amount("5") }),
      write: (app) => watched.server.admin.setLimit(watched.server.subject.userId, app, { limit: amount("6") }),
    },
    { what: "Suspend", write: (app) => watched.server.admin.suspend(watched.server.subject.userId, app, { reason: "review" }) },
    {
      what: "Unsuspend removing the row",
      setUp: (app) => watched.server.admin.suspend(watched.server.subject.userId, app, {}),
      write: (app) => watched.server.admin.unsuspend(watched.server.subject.userId, app),
    },
    { what: "SetExtension", write: (app) => watched.server.admin.setExtension(watched.server.subject.userId, app, { limit: amount("9"), expiresAt: later() }) },
    // The subject's first call fetches its token: a read before it.
    { what: "my SetLimit", setUp: () => watched.server.subject.f.myList(), write: (app) => watched.server.subject.f.mySetLimit(app, { limit: amount("5") }) },
    { what: "AppCap Set", write: (app) => watched.server.admin.capSet(app, { controls: { limit: amount("5") } }) },
  ];

  it.each(cases)("$what: a read and a write", async ({ setUp, write }) => {
    const app = newAppId("trips");
    if (setUp) unwrap(await setUp(app));
    const trips = await watched.roundTrips(TOUCHING_ROW, () => write(app));
    expect(trips.length, trips.join("\n")).toBe(2);
    expect(trips[1]).toMatch(/write_controls_row/);
  });

  it("a write that changes nothing is the read alone", async () => {
    const app = newAppId("trips");
    unwrap(await watched.server.admin.setLimit(watched.server.subject.userId, app, { limit: amount("5") }));
    const trips = await watched.roundTrips(TOUCHING_ROW, () => watched.server.admin.setLimit(watched.server.subject.userId, app, { limit: amount("5") }));
    expect(trips.length, trips.join("\n")).toBe(1);
  });
});
