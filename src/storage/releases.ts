// The releases deployed so far, oldest first: the commit each was built from (tags may not survive a
// clone; the upgrade test builds the last one from git) and the last migration it knows. A migration
// that the release before it runs with records that release's last migration (./migrate-up.ts). To
// release: append the release's commit and its last migration here (CHANGELOG.md says when).
// What a release cannot read of what later ones write is said here too, for a rollback to it
// (./migrate-down.ts, `npm run migrate -- --down-to <release>`).
export interface Release {
  commit: string;
  lastMigration: string;
  /** It refuses to start on a database whose kysely_migration names a migration it does not know (Kysely's own check: it predates the compatibility records). */
  refusesUnknownMigrations?: true;
  /** It reads the access-token signing keys' private parts as plain JSON only (later releases seal them). */
  readsPlainSigningKeys?: true;
  /** It reads kept answers whole only (JSON, or sealed), not as the reference later releases keep Authorize's by. */
  readsWholeAnswersOnly?: true;
}

export const RELEASES: readonly Release[] = [
  { commit: "3753460013da67aca23cb36427e918a06558e05a", lastMigration: "0018_spend_windows_by_start_and_end", refusesUnknownMigrations: true, readsPlainSigningKeys: true, readsWholeAnswersOnly: true },
];

/** The release whose commit begins with `prefix` (7 hexadecimal digits at least); undefined when none or several do. */
export function releaseNamed(prefix: string, releases: readonly Release[] = RELEASES): Release | undefined {
  if (!/^[0-9a-f]{7,40}$/i.test(prefix)) return undefined;
  const found = releases.filter((r) => r.commit.startsWith(prefix.toLowerCase()));
  return found.length === 1 ? found[0] : undefined;
}
