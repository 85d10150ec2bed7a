// The counts behind tenant_api_notification_destinations, on the test database's dialect
// (TEST_DATABASE): each destination that failed counted once, in the state it is in now.
import { expect, it } from "vitest";
import { NotificationDestinations } from "../../src/automations/notification-destinations.js";
import { ManualClock } from "../../src/core/clock.js";
import { PageTokens } from "../../src/core/pagination.js";
import { freshStorageEachTest } from "../support/storage.js";

const fresh = freshStorageEachTest("tenant-api-destination-counts");

it("counts the destinations by state: failing, circuit open, disabled, healthy again", async () => {
  const clock = new ManualClock(Date.parse("2026-11-29T10:00:00Z"));
  const destinations = new NotificationDestinations(fresh.storage, clock, { circuitFailures: 2, cooldownMs: 60_000, disableAfterMs: 3_600_000 }, new PageTokens(Buffer.alloc(32, 1)));
  expect(await destinations.counts()).toEqual([]);
  await destinations.failed("failing.example:443", "TIMEOUT", undefined);
  for (let i = 0; i < 2; i++) await destinations.failed("open.example:443", "HTTP 503", undefined);
  const byState = async () => Object.fromEntries((await destinations.counts()).map((c) => [c.state, c.count]));
  expect(await byState()).toEqual({ NOTIFICATION_DESTINATION_STATE_FAILING: 1, NOTIFICATION_DESTINATION_STATE_CIRCUIT_OPEN: 1 });
  await destinations.failed("healthy.example:443", "HTTP 503", undefined);
  await destinations.answered("healthy.example:443");
  await destinations.failed("disabled.example:443", "TIMEOUT", undefined);
  clock.advance(3_600_000);
  expect(await destinations.failed("disabled.example:443", "TIMEOUT", undefined)).toBe(true);
  // The open circuit's cool-down has passed with the hour: failing, its next attempt a trial.
  expect(await byState()).toEqual({ NOTIFICATION_DESTINATION_STATE_FAILING: 2, NOTIFICATION_DESTINATION_STATE_HEALTHY: 1, NOTIFICATION_DESTINATION_STATE_DISABLED: 1 });
});
