// The releases deployed so far, oldest first: the commit each was built from (tags may not survive a
// clone; the upgrade test builds the last one from git) and the last migration it knows. A migration
// that the release before it runs with records that release's last migration (./migrate.ts). To
// release: append the release's commit and its last migration here (CHANGELOG.md says when).
export interface Release {
  commit: string;
  lastMigration: string;
}

export const RELEASES: readonly Release[] = [{ commit: "3753460013da67aca23cb36427e918a06558e05a", lastMigration: "0018_spend_windows_by_start_and_end" }];
