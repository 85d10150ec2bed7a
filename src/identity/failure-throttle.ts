// Throttles guessing of client secrets: per key (the grant's client id and source address), at most
// MAX_FAILURES failed attempts within WINDOW_MS, across every instance. An attempt holds one of the
// key's places from before its secret is checked until it is decided, so guesses sent at once are
// checked no more than guesses sent one by one, and a request that finds places held by undecided
// attempts waits for them rather than being refused. The places are a row of token_failures per key,
// stored under a SHA-256 digest of it. Why: docs/operating.md, "Rate limits".
import { createHash } from "node:crypto";
import type { Clock } from "../core/clock.js";
import type { Origin } from "../core/origin.js";
import type { Storage } from "../storage/connect.js";
import { writeTransaction, type Db } from "../storage/transactions.js";

const MAX_FAILURES = 5;
const WINDOW_MS = 5 * 60_000;
/** How long an attempt may hold its place undecided: its instance died, or lost the database. */
const LAPSE_MS = 30_000;
/** How long a request waits for places held by attempts in flight. */
const MAX_WAIT_MS = 10_000;
/** How often a waiting request looks for decisions of the other instances. */
const POLL_MS = 50;
/**
 * Added to the start of an attempt in flight: an entry that is no integer (a failure is the
 * millisecond it was decided at). The release before reads every entry within the window as an
 * attempt that counts until a success deletes the row, so during a rolling upgrade each release
 * counts the other's attempts, and no more than MAX_FAILURES guesses are checked at once on both.
 */
const IN_FLIGHT = 0.5;

const digest = (key: string) => createHash("sha256").update(key, "utf8").digest("base64url");
const inFlight = (entry: number) => !Number.isInteger(entry);
const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** An attempt admitted: it holds one of its key's places until decided. */
export interface Attempt {
  /** The secret was right: frees the place and forgets the key's failures. */
  succeeded(origin?: Origin): Promise<void>;
  /** The secret was wrong (or the credential revoked): the place stays taken, as a failure, for the window. */
  failed(origin?: Origin): Promise<void>;
  /** The check itself failed (no answer was given): frees the place. */
  abandoned(origin?: Origin): Promise<void>;
}

export type Admission =
  | { attempt: Attempt }
  /** Refused: `retryAfter` seconds until the next attempt is allowed (`undecided`: at the latest, when an attempt in flight lapses). */
  | { retryAfter: number; undecided: boolean };

type Outcome = "success" | "failure" | "undecided";

type Look = { entry: number } | { retryAfter: number; undecided: boolean };

export class FailureThrottle {
  /** Per key digest: the end of the queue of this instance's requests for it. */
  private readonly turns = new Map<string, Promise<unknown>>();
  /** Per key digest: wakes the request whose turn it is, waiting for a decision. */
  private readonly wakers = new Map<string, () => void>();

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
  ) {}

  /** Admits one attempt for `key`, once a place is free (waiting for attempts in flight), or refuses it. */
  async admit(key: string, origin?: Origin): Promise<Admission> {
    const id = digest(key);
    const until = performance.now() + MAX_WAIT_MS;
    return this.inTurn(id, async () => {
      for (;;) {
        const look = await this.take(id, origin);
        if ("entry" in look) return { attempt: this.attempt(id, look.entry) };
        const left = until - performance.now();
        if (!look.undecided || left <= 0) return look;
        await this.decided(id, Math.min(left, POLL_MS));
      }
    });
  }

  /** Takes a place for `id` when one is free: answers the entry of the attempt, or why not. */
  private take(id: string, origin: Origin | undefined): Promise<Look> {
    return writeTransaction(this.storage, { exclusive: [`token_failures:${id}`] }, async (db) => {
      const now = Math.floor(this.clock.now());
      // Rows whose last entry left the window say nothing any more, whoever they were for.
      await db.deleteFrom("token_failures").where("last_at", "<=", new Date(now - WINDOW_MS).toISOString()).execute();
      const entries = await this.entries(db, id, now);
      const failures = entries.filter((e) => !inFlight(e));
      if (failures.length >= MAX_FAILURES) return { retryAfter: seconds(failures[failures.length - MAX_FAILURES]! + WINDOW_MS - now), undecided: false };
      if (entries.length >= MAX_FAILURES) return { retryAfter: seconds(Math.floor(entries.find(inFlight)!) + LAPSE_MS - now), undecided: true };
      const entry = now + IN_FLIGHT;
      await this.store(db, id, [...entries, entry]);
      return { entry };
    }, { origin });
  }

  private attempt(id: string, entry: number): Attempt {
    return {
      succeeded: (origin) => this.settle(id, entry, "success", origin),
      failed: (origin) => this.settle(id, entry, "failure", origin),
      abandoned: (origin) => this.settle(id, entry, "undecided", origin),
    };
  }

  /** Decides the attempt of `entry` (gone already if it lapsed and another instance dropped it). */
  private async settle(id: string, entry: number, outcome: Outcome, origin: Origin | undefined): Promise<void> {
    await writeTransaction(this.storage, { exclusive: [`token_failures:${id}`] }, async (db) => {
      const now = Math.floor(this.clock.now());
      const entries = await this.entries(db, id, now);
      const at = entries.indexOf(entry);
      if (at >= 0) entries.splice(at, 1);
      await this.store(db, id, outcome === "success" ? entries.filter(inFlight) : outcome === "failure" ? [...entries, now] : entries);
    }, { origin });
    this.wakers.get(id)?.();
  }

  /** The entries of `id` that count at `now`: failures within the window, attempts in flight not lapsed. */
  private async entries(db: Db, id: string, now: number): Promise<number[]> {
    const row = await db.selectFrom("token_failures").select("attempts").where("key", "=", id).executeTakeFirst();
    const entries = row ? (JSON.parse(row.attempts) as number[]) : [];
    return entries.filter((e) => Math.floor(e) > now - (inFlight(e) ? LAPSE_MS : WINDOW_MS)).sort((a, b) => a - b);
  }

  private async store(db: Db, id: string, entries: number[]): Promise<void> {
    if (entries.length === 0) {
      await db.deleteFrom("token_failures").where("key", "=", id).execute();
      return;
    }
    entries.sort((a, b) => a - b);
    const attempts = JSON.stringify(entries);
    const lastAt = new Date(Math.floor(entries.at(-1)!)).toISOString();
    await db
      .insertInto("token_failures")
      .values({ key: id, attempts, last_at: lastAt })
      .onConflict((oc) => oc.column("key").doUpdateSet({ attempts, last_at: lastAt }))
      .execute();
  }

  /** Runs `body` once the requests of `id` that came before on this instance have had their turn. */
  private async inTurn<T>(id: string, body: () => Promise<T>): Promise<T> {
    const mine = (this.turns.get(id) ?? Promise.resolve()).then(body);
    const end = mine.catch(() => undefined);
    this.turns.set(id, end);
    try {
      return await mine;
    } finally {
      if (this.turns.get(id) === end) this.turns.delete(id);
    }
  }

  /** Resolves when an attempt of `id` is decided on this instance, or after `ms`. */
  private decided(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        if (this.wakers.get(id) === wake) this.wakers.delete(id);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.wakers.set(id, wake);
    });
  }
}
