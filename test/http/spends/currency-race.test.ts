// A fund currency change against a concurrent writer of an amount (Authorize, SetLimit, my SetLimit,
// AppCap Set) on PostgreSQL (READ COMMITTED): whichever way they interleave, no amount is ever
// stored in a currency other than the policy's, and the loser gets its documented refusal (the
// writer 400 CURRENCY_MISMATCH, the change 409 CURRENCY_IN_USE). The test's own connection holds
// a lock that pauses one side at the worst moment, waits until the other side is blocked or done,
// then lets go. SQLite runs every write transaction under the database's one write lock (BEGIN
// IMMEDIATE), so the two can never interleave there; the writers take the same code path.
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { expectError, reasonOf, UNLIMITED, type Answer } from "../limits/helpers.js";
import { amount, money, newAppId, startSpendServer, type SpendServer } from "./helpers.js";

type Currency = "USD" | "EUR";

interface Writer {
  name: string;
  /** The table the write inserts into: locking it pauses the writer after it has read the currency. */
  table: string;
  /** Sets up what the write needs (before any lock is held), and answers the write. */
  prepare(): Promise<(currency: Currency) => Promise<Answer>>;
}

let server: SpendServer;
let holder: pg.Client;

// `server` is read when a test runs, not when the cases are declared.
const WRITERS: Writer[] = [
  {
    name: "SpendService.Authorize",
    table: "spend_authorizations",
    prepare: async () => {
      // An unlimited limit holds no amount, so only the spend can hold the currency.
      const app = newAppId("race");
      unwrap(await server.admin.setLimit(server.subject.userId, app, { limit: UNLIMITED }));
      return (c) => server.spend.authorize({ userId: server.subject.userId, appId: app, amount: money("1", 0, c) });
    },
  },
  {
    name: "SubjectAppLimitService.SetLimit",
    table: "subject_app_limits",
    prepare: async () => (c) => server.admin.setLimit(server.subject.userId, newAppId("race"), { limit: amount("5", 0, c) }),
  },
  { name: "MyFundLimitsService.SetLimit", table: "subject_app_limits", prepare: async () => (c) => server.subject.f.mySetLimit(newAppId("race"), { limit: amount("5", 0, c) }) },
  { name: "AppCapService.Set", table: "app_caps", prepare: async () => (c) => server.admin.capSet(newAppId("race"), { controls: { limit: amount("5", 0, c) } }) },
];

const changeTo = (currencyCode: Currency) => server.admin.policyUpdate({ fundPolicy: { currencyCode, defaultControls: null }, updateMask: "currencyCode" });

/** How many of the server's connections wait for a lock of this kind (pg_stat_activity.wait_event). */
async function waiting(kind: "relation" | "transactionid" | "advisory"): Promise<number> {
  const { rows } = await holder.query<{ n: number }>(
    "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and wait_event = $1",
    [kind],
  );
  return rows[0]!.n;
}

// Generous: on a loaded machine (the PostgreSQL suite runs its files in parallel) a request can take
// seconds to reach its lock.
const LOCK_WAIT_MS = 25_000;
const CASE_TIMEOUT_MS = 90_000;

async function until(condition: () => Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + LOCK_WAIT_MS; !(await condition()); ) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the lock");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Runs `body` while the test's own connection holds the lock `statement` takes, and lets it go
 * whatever happens, so that a failed case leaves no lock to the next.
 */
async function holding(statement: string, body: () => Promise<void>): Promise<void> {
  await holder.query("begin");
  try {
    await holder.query(statement);
    await body();
  } finally {
    await holder.query("rollback");
  }
}

/**
 * Resolves once `answer` has settled or a server connection waits on a lock of `kind` (advisory: the
 * fund policy's). A request that settles without waiting (refused, or 503 on a loaded machine) ends
 * the wait, so that the case fails on its answer rather than on a timeout.
 */
const settledOrWaiting = (answer: Promise<unknown>, kind: "relation" | "transactionid" | "advisory" = "advisory") => {
  let settled = false;
  void answer.finally(() => (settled = true));
  return until(async () => settled || (await waiting(kind)) > 0);
};

/** Every currency an amount or a spend is stored in, and the policy's: the invariant is that they are one. */
async function storedCurrencies(): Promise<{ policy: string; stored: string[] }> {
  const policy = unwrap(await server.admin.policyGet()).fundPolicy.currencyCode;
  const { rows } = await holder.query<{ c: string }>(
    `select currency_code as c from spend_authorizations
     union select amount_currency from subject_app_limits where deleted_at is null and amount_currency is not null
     union select amount_currency from app_caps where deleted_at is null and amount_currency is not null`,
  );
  return { policy, stored: rows.map((r) => r.c) };
}

async function expectOneCurrency(): Promise<void> {
  const { policy, stored } = await storedCurrencies();
  for (const c of stored) expect(c, `an amount stored in ${c} under a ${policy} policy`).toBe(policy);
}

describe.skipIf(testDialect() !== "postgres")("a fund currency change racing a writer of an amount (PostgreSQL)", () => {
  beforeAll(async () => {
    server = await startSpendServer();
    holder = new pg.Client({ connectionString: server.ts.databaseUrl });
    await holder.connect();
  });
  afterAll(async () => {
    await holder?.end();
    await server?.ts.stop();
  });

  // Each case starts from a USD policy holding no amount, so the change alone would succeed.
  beforeEach(async () => {
    await holder.query("truncate spend_authorizations, subject_app_limits, app_caps cascade");
    unwrap(await changeTo("USD"));
  });

  for (const writer of WRITERS) {
    it(`${writer.name} reads the currency, the change comes before it writes: the change waits for it, then is 409 CURRENCY_IN_USE`, async () => {
      const write = await writer.prepare();
      let written: Promise<Answer> | undefined;
      let change: Promise<Answer> | undefined;
      await holding(`lock table ${writer.table} in exclusive mode`, async () => {
        written = write("USD");
        await settledOrWaiting(written, "relation");
        change = changeTo("EUR");
        await settledOrWaiting(change);
      });

      const [wrote, changed] = await Promise.all([written!, change!]);
      expect(wrote.response.status, `${writer.name}: ${JSON.stringify(wrote.error)}`).toBe(200);
      expectError(changed, 409, "CURRENCY_IN_USE");
      await expectOneCurrency();
    }, CASE_TIMEOUT_MS);

    it(`${writer.name} comes once the change has counted the amounts: it waits for the change, then is 400 CURRENCY_MISMATCH`, async () => {
      const write = await writer.prepare();
      let written: Promise<Answer> | undefined;
      let change: Promise<Answer> | undefined;
      // The change blocks at its UPDATE of the policy row, after its count of the stored amounts.
      await holding("select 1 from fund_policy for update", async () => {
        change = changeTo("EUR");
        await settledOrWaiting(change, "transactionid");
        written = write("USD");
        await settledOrWaiting(written);
      });

      const [wrote, changed] = await Promise.all([written!, change!]);
      expect(changed.response.status, JSON.stringify(changed.error)).toBe(200);
      expectError(wrote, 400, "CURRENCY_MISMATCH");
      await expectOneCurrency();
    }, CASE_TIMEOUT_MS);
  }

  it("many authorizations in either currency while the currency flips: never a spend in another currency", async () => {
    const { admin, spend, subject } = server;
    const app = newAppId("race");
    for (let round = 0; round < 10; round++) {
      await holder.query("truncate spend_authorizations cascade");
      unwrap(await changeTo("USD"));
      unwrap(await admin.setLimit(subject.userId, app, { limit: UNLIMITED }));
      const pick = (): Currency => (Math.random() < 0.5 ? "USD" : "EUR");
      const authorizations = Array.from({ length: 20 }, () => spend.authorize({ userId: subject.userId, appId: app, amount: money("1", 0, pick()) }));
      const flips = Array.from({ length: 4 }, (_, i) => changeTo(i % 2 === 0 ? "EUR" : "USD"));
      const answers = await Promise.all([...authorizations, ...flips]);
      for (const a of answers.slice(0, 20)) {
        if (a.response.status !== 200) expect(reasonOf(a.error), JSON.stringify(a.error)).toBe("CURRENCY_MISMATCH");
      }
      for (const f of answers.slice(20)) {
        if (f.response.status !== 200) expect(reasonOf(f.error), JSON.stringify(f.error)).toBe("CURRENCY_IN_USE");
      }
      await expectOneCurrency();
    }
  }, CASE_TIMEOUT_MS);
});
