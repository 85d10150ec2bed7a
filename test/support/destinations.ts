// A notification destination that failed, as a notify step's failed attempts record one: written
// in a server's database by a storage of its own (as another process of the release would), for
// the tests that call NotificationDestinationService without sending notifications.
import { destinationId } from "../../src/automations/notification-destinations.js";
import { loadConfig } from "../../src/config.js";
import { openStorage } from "../../src/storage/connect.js";

/** Writes `destination` (`host:port`) failed 7 times in a row since `at`, `disabled` or not, in the database at `databaseUrl`; answers its id. */
export async function failedDestination(databaseUrl: string, destination: string, at: string, disabled = false): Promise<string> {
  const storage = await openStorage(loadConfig({ DATABASE_URL: databaseUrl }).database);
  const id = destinationId(destination);
  try {
    await storage.db
      .insertInto("notification_destinations")
      .values({ id, destination, consecutive_failures: 7, failing_since: at, open_until: null, disabled_at: disabled ? at : null, last_error: "HTTP 503", updated_at: at })
      .execute();
  } finally {
    await storage.close();
  }
  return id;
}
