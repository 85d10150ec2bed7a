// Records of requests made with an Idempotency-Key, shared by every instance on the database. The
// record's primary key settles who runs a request (../http/idempotency.ts): claimed first (one
// attempt inserts the record with a lease and runs; the others find it), or kept with the effect
// (each attempt runs and inserts the record with its answer in its effect's transaction; one that
// finds the key taken rolls back). A record past retention, or whose lease lapsed, is taken over by
// the same upsert.
import { randomUUID } from "node:crypto";
import type { BackgroundTask } from "../core/background-task.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import { repeatedSweep } from "./background-failures.js";
import type { Origin } from "../core/origin.js";
import type { Storage } from "./connect.js";
import { prepared } from "./prepared.js";
import type { QueryCreator } from "kysely";
import type { Database, IdempotencyRecordsTable } from "./schema.js";
import { writeStatement, type Db, type KeptRecord, type WriteOptions } from "./transactions.js";

/** How long an answer is replayed: 24 hours from the first request. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000;

/** How long a running request holds its record; far longer than any request takes. */
const LEASE_MS = 60_000;

export type Claim =
  /** The record is the caller's: run the request, then `complete` or `release` it as `owner`. */
  | { kind: "claimed"; owner: string }
  /** The request ran already: its fingerprint and sealed answer. */
  | { kind: "answered"; fingerprint: string; answer: string }
  /** Another attempt is running it now. */
  | { kind: "running"; fingerprint: string };

const iso = (ms: number) => new Date(ms).toISOString();

/** Inserts `record`, or takes over one created at or before `retained` or whose lease lapsed by `now`. */
const upsertRecord = (db: QueryCreator<Database>, record: IdempotencyRecordsTable, retained: string, now: string) =>
  db
    .insertInto("idempotency_records")
    .values(record)
    .onConflict((oc) =>
      oc
        .column("id")
        .doUpdateSet(record)
        .where((eb) =>
          eb.or([
            eb("idempotency_records.created_at", "<=", retained),
            eb.and([eb("idempotency_records.answer", "is", null), eb("idempotency_records.locked_until", "<=", now)]),
          ]),
        ),
    );

const claimStatement = prepared((db, v: IdempotencyRecordsTable & { answer: null; retained: string; now: string }) =>
  upsertRecord(db, { id: v.id, fingerprint: v.fingerprint, owner: v.owner, locked_until: v.locked_until, answer: null, created_at: v.created_at }, v.retained, v.now),
);

/** Inserts kept record `v` (or takes over, as a claim does): one row affected, none when another attempt holds the key. */
const keepInsert = (db: QueryCreator<Database>, v: KeptRecord) =>
  upsertRecord(db, { id: v.id, fingerprint: v.fingerprint, owner: v.owner, locked_until: null, answer: v.answer, created_at: v.created_at }, v.retained, v.created_at);

const keepStatement = prepared(keepInsert);

/** A kept record's values under names of their own, for a statement that binds other values too. */
export type KeptBindings = { [K in keyof KeptRecord as `kept_${K}`]: KeptRecord[K] };

export const keptBindings = (r: KeptRecord): KeptBindings => ({
  kept_id: r.id,
  kept_fingerprint: r.fingerprint,
  kept_owner: r.owner,
  kept_answer: r.answer,
  kept_created_at: r.created_at,
  kept_retained: r.retained,
});

/** `keepInsert` over `keptBindings`' names. */
export const keepInsertBound = (db: QueryCreator<Database>, v: KeptBindings) =>
  keepInsert(db, { id: v.kept_id, fingerprint: v.kept_fingerprint, owner: v.kept_owner, answer: v.kept_answer, created_at: v.kept_created_at, retained: v.kept_retained });

const recordStatement = prepared((db, v: { id: string }) =>
  db.selectFrom("idempotency_records").select(["fingerprint", "locked_until", "answer", "created_at"]).where("id", "=", v.id),
);

const completeStatement = prepared((db, v: { id: string; owner: string; answer: string }) =>
  db.updateTable("idempotency_records").set({ answer: v.answer, locked_until: null }).where("id", "=", v.id).where("owner", "=", v.owner),
);

const releaseStatement = prepared((db, v: { id: string; owner: string }) =>
  db.deleteFrom("idempotency_records").where("id", "=", v.id).where("owner", "=", v.owner).where("answer", "is", null),
);

/** Claims lost to a record that then vanished or lapsed before it could be read: tried again this often. */
const CLAIM_ATTEMPTS = 3;

export class IdempotencyRecords {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
  ) {}

  /** Claims record `id` for a request of `fingerprint`, or says who has it. */
  async claim(id: string, fingerprint: string, origin?: Origin): Promise<Claim> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const now = this.clock.now();
      const owner = randomUUID();
      const record = { id, fingerprint, owner, locked_until: iso(now + LEASE_MS), answer: null, created_at: iso(now) };
      const claimed = await writeStatement(this.storage, (db) => claimStatement.execute(db, { ...record, retained: iso(now - IDEMPOTENCY_RETENTION_MS), now: iso(now) }), origin);
      if (Number(claimed.numAffectedRows ?? 0) === 1) return { kind: "claimed", owner };
      const found = await this.find(id);
      if (found) return found;
    }
    throw new Error(`idempotency record still contended after ${CLAIM_ATTEMPTS} claims`);
  }

  /** Who has record `id` now: none when it is missing, past retention or its lease lapsed (free to take). */
  async find(id: string): Promise<Exclude<Claim, { kind: "claimed" }> | undefined> {
    const now = this.clock.now();
    const [found] = (await recordStatement.execute(this.storage.db, { id })).rows;
    if (!found || found.created_at <= iso(now - IDEMPOTENCY_RETENTION_MS)) return undefined;
    if (found.answer !== null) return { kind: "answered", fingerprint: found.fingerprint, answer: found.answer };
    if (found.locked_until !== null && found.locked_until > iso(now)) return { kind: "running", fingerprint: found.fingerprint };
    return undefined;
  }

  /** Record `id`'s values with `answer`, to keep as attempt `owner` of a request of `fingerprint` ran it. */
  kept(id: string, fingerprint: string, owner: string, answer: string): KeptRecord {
    const now = this.clock.now();
    return { id, fingerprint, owner, answer, created_at: iso(now), retained: iso(now - IDEMPOTENCY_RETENTION_MS) };
  }

  /** Keeps `record` in transaction `options.outer` (`storage` alone when absent); false when another attempt holds the key. */
  async keep(record: KeptRecord, { outer, origin }: WriteOptions): Promise<boolean> {
    const result = await (outer ? keepStatement.execute(outer, record) : writeStatement(this.storage, (tx) => keepStatement.execute(tx, record), origin));
    return Number(result.numAffectedRows ?? 0) === 1;
  }

  /** Keeps `answer` (sealed) for replays; a no-op when `owner` no longer holds the record. */
  async complete(id: string, owner: string, answer: string, origin?: Origin): Promise<void> {
    await writeStatement(this.storage, (db) => completeStatement.execute(db, { id, owner, answer }), origin);
  }

  /**
   * `complete` inside the transaction `db` of the request's effect, so that the effect and its kept
   * answer commit together or not at all. False when `owner` no longer holds the record (its lease
   * lapsed and another attempt took it over): the caller must then roll its effect back.
   */
  async completeIn(db: Db, id: string, owner: string, answer: string): Promise<boolean> {
    const result = await completeStatement.execute(db, { id, owner, answer });
    return Number(result.numAffectedRows) === 1;
  }

  /**
   * Frees the key for another attempt (the request failed before any answer worth keeping). A record
   * holding an answer stays: its effect committed with it, though the failure came after (a COMMIT
   * whose reply was lost with the connection), and a retry must replay it, not run again.
   */
  async release(id: string, owner: string, origin?: Origin): Promise<void> {
    await writeStatement(this.storage, (db) => releaseStatement.execute(db, { id, owner }), origin);
  }

  /** Removes records past retention; safe to run on every instance at once. */
  async sweep(): Promise<number> {
    const retained = iso(this.clock.now() - IDEMPOTENCY_RETENTION_MS);
    const result = await this.storage.db.deleteFrom("idempotency_records").where("created_at", "<=", retained).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/** How often expired Idempotency-Key records are removed (an expired one is also replaced when its key comes again). */
const IDEMPOTENCY_SWEEP_MS = 10 * 60_000;

/** Starts the sweep of expired records. */
export const startIdempotencySweep = (records: IdempotencyRecords, logger: Logger): BackgroundTask =>
  repeatedSweep(logger, IDEMPOTENCY_SWEEP_MS, "idempotency record sweep", () => records.sweep(), "swept idempotency records");
