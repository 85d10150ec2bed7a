// AUDIT_RETENTION_DAYS, on the test database's dialect (TEST_DATABASE): the sweep removes the audit
// events older than the retention, oldest first in batches, and none younger; unset, nothing is swept.
import { expect, it } from "vitest";
import { auditRow } from "../../src/audit/audit-record.js";
import { pruneAuditEvents } from "../../src/audit/audit-retention.js";
import { limitTarget } from "../../src/audit/change.js";
import { ManualClock } from "../../src/core/clock.js";
import { loadConfig } from "../../src/config.js";
import { freshStorageEachTest } from "../support/storage.js";

const fresh = freshStorageEachTest("tenant-api-audit-retention");

const DAY = 86_400_000;
const NOW = Date.parse("2026-11-20T09:00:00.000Z");
const origin = { actor: { kind: "user", userId: "u1", credentialId: "c1", requestId: "r1" } } as const;

function events(from: number, count: number, stepMs: number) {
  return Array.from({ length: count }, (_, i) => auditRow(origin, from + i * stepMs, { operationId: "svc.api.funds.v1.SubjectAppLimitService.SetLimit", target: limitTarget("u1", "app-1"), before: null, after: { n: i } })!);
}

it("removes the events older than the retention, across batches, and keeps every younger one", async () => {
  const old = events(NOW - 40 * DAY, 2_500, 1_000);
  const kept = [...events(NOW - 30 * DAY + 1, 3, 1_000), ...events(NOW - DAY, 5, 1_000)];
  for (let i = 0; i < old.length; i += 500) await fresh.storage.db.insertInto("audit_events").values(old.slice(i, i + 500)).execute();
  await fresh.storage.db.insertInto("audit_events").values(kept).execute();

  expect(await pruneAuditEvents(fresh.storage, new ManualClock(NOW), 30)).toBe(2_500);
  const left = await fresh.storage.db.selectFrom("audit_events").select("id").orderBy("id").execute();
  expect(left.map((r) => r.id)).toEqual(kept.map((r) => r.id).sort());
  expect(await pruneAuditEvents(fresh.storage, new ManualClock(NOW), 30)).toBe(0);
});

it("keeps every event unless AUDIT_RETENTION_DAYS is set, to 30 days or more", () => {
  expect(loadConfig({}).auditRetentionDays).toBeNull();
  expect(loadConfig({ AUDIT_RETENTION_DAYS: "kept" }).auditRetentionDays).toBeNull();
  expect(loadConfig({ AUDIT_RETENTION_DAYS: "400" }).auditRetentionDays).toBe(400);
});
