// Why this instance should get no traffic now, in the words of /readyz: the reasons it answers and
// the readiness metrics show come from here, so that an alert on the metric and the probe agree.

export const UNREADY_REASONS = ["database-unreachable", "workers-stuck"] as const;

export type UnreadyReason = (typeof UNREADY_REASONS)[number];

export function unreadyReasons(databaseReachable: boolean, workersStuck: boolean): UnreadyReason[] {
  const reasons: UnreadyReason[] = [];
  if (!databaseReachable) reasons.push("database-unreachable");
  if (workersStuck) reasons.push("workers-stuck");
  return reasons;
}
