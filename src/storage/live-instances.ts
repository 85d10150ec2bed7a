// How many instances share the database, learned without a query per request: each instance
// refreshes its own row every HEARTBEAT_MS in the background and counts the rows refreshed within
// LIVE_MS; the rate limits divide their quota by that count. An instance counts itself from its
// first refresh, before it serves; one that stops deletes its row, one that dies stops being
// counted LIVE_MS after its last refresh. docs/operating.md, "Rate limits".
import type { Clock } from "../core/clock.js";
import { BackgroundTask } from "../core/background-task.js";
import { newId } from "../core/ids.js";
import type { Logger } from "../core/logger.js";
import { BackgroundFailures } from "./background-failures.js";
import type { Storage } from "./connect.js";
import { writeStatement } from "./transactions.js";

export const HEARTBEAT_MS = 5_000;
/** Three missed refreshes: a busy instance is not dropped for one late beat. */
export const LIVE_MS = 3 * HEARTBEAT_MS;
/** Rows of instances gone this long are deleted by whichever instance refreshes. */
const FORGET_MS = 60 * 60_000;

export class LiveInstances {
  private readonly id = newId();
  private live = 1;
  private readonly failures: BackgroundFailures;
  private readonly refreshes = new BackgroundTask(HEARTBEAT_MS, () =>
    this.refresh().then(
      () => this.failures.succeeded(),
      (err: unknown) => this.failures.failed(err, { instances: this.live, kept: "the last count" }),
    ),
  );

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    logger: Logger,
  ) {
    this.failures = new BackgroundFailures(logger, "instance heartbeat");
  }

  /** The instances counted at the last refresh, this one included. */
  get count(): number {
    return this.live;
  }

  /** Registers this instance and refreshes in the background until `stop`. */
  async start(): Promise<void> {
    await this.refresh();
    this.refreshes.start();
  }

  async stop(): Promise<void> {
    await this.refreshes.stop();
    await writeStatement(this.storage, (db) => db.deleteFrom("instance_heartbeats").where("id", "=", this.id).execute()).catch(() => undefined);
  }

  private async refresh(): Promise<void> {
    const now = this.clock.now();
    const at = (ms: number) => new Date(ms).toISOString();
    await writeStatement(this.storage, (db) =>
      db
        .insertInto("instance_heartbeats")
        .values({ id: this.id, started_at: at(now), last_seen: at(now) })
        .onConflict((oc) => oc.column("id").doUpdateSet({ last_seen: at(now) }))
        .execute(),
    );
    await writeStatement(this.storage, (db) => db.deleteFrom("instance_heartbeats").where("last_seen", "<", at(now - FORGET_MS)).execute());
    const { live } = await this.storage.db
      .selectFrom("instance_heartbeats")
      .select((eb) => eb.fn.countAll<number | string>().as("live"))
      .where((eb) => eb.or([eb("last_seen", ">", at(now - LIVE_MS)), eb("id", "=", this.id)]))
      .executeTakeFirstOrThrow();
    this.live = Math.max(1, Number(live));
  }
}
