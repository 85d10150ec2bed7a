// Throttles guessing of client secrets. An attempt is counted before its secret is checked, so
// guesses sent all at once count like guesses sent one by one; a success clears the count. After
// MAX_FAILURES within WINDOW_MS the key is refused (429) until the window has passed, whatever
// secret it sends, so a right guess cannot be told from a wrong one. The grant keys it by client
// id and source address: an attacker elsewhere cannot lock the real client out.
//
// The counts live in the database, so that every instance behind a balancer sees the same ones
// (an attacker gets five guesses, not five per instance). Keys are stored as SHA-256 digests: the
// table holds neither the client ids callers made up nor their addresses.
import { createHash } from "node:crypto";
import type { Clock } from "../core/clock.js";
import type { Origin } from "../core/origin.js";
import type { Storage } from "../storage/connect.js";
import { writeStatement, writeTransaction } from "../storage/transactions.js";

const MAX_FAILURES = 5;
const WINDOW_MS = 5 * 60_000;

const digest = (key: string) => createHash("sha256").update(key, "utf8").digest("base64url");

export class FailureThrottle {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
  ) {}

  /**
   * Admits one attempt for `key`: 0 when admitted (it counts as a failure until `clear`), else the
   * seconds until `key` may try again.
   */
  async admit(key: string, origin?: Origin): Promise<number> {
    const id = digest(key);
    return writeTransaction(this.storage, { exclusive: [`token_failures:${id}`] }, async (db) => {
      const now = this.clock.now();
      const since = now - WINDOW_MS;
      // Rows whose last attempt left the window say nothing any more, whoever they were for.
      await db.deleteFrom("token_failures").where("last_at", "<=", new Date(since).toISOString()).execute();
      const row = await db.selectFrom("token_failures").select("attempts").where("key", "=", id).executeTakeFirst();
      const times = row ? (JSON.parse(row.attempts) as number[]).filter((t) => t > since) : [];
      if (times.length >= MAX_FAILURES) {
        const oldest = times[times.length - MAX_FAILURES] ?? now;
        return Math.max(1, Math.ceil((oldest + WINDOW_MS - now) / 1000));
      }
      const attempts = JSON.stringify([...times, now]);
      const lastAt = new Date(now).toISOString();
      await db
        .insertInto("token_failures")
        .values({ key: id, attempts, last_at: lastAt })
        .onConflict((oc) => oc.column("key").doUpdateSet({ attempts, last_at: lastAt }))
        .execute();
      return 0;
    }, { origin });
  }

  /** Forgets the failures of `key` (its attempt succeeded). */
  async clear(key: string, origin?: Origin): Promise<void> {
    const id = digest(key);
    await writeStatement(this.storage, (db) => db.deleteFrom("token_failures").where("key", "=", id).execute(), origin);
  }
}
