// Whose spends a caller may act on and see: an access scope the HTTP layer builds from the
// principal (administrators: all; an app service: the apps its credential is bound to; a user:
// their own), so the spend rules never look at roles themselves.
import { permissionDenied } from "../../core/errors.js";

export type SpendAccess =
  | { kind: "all" }
  | { kind: "apps"; appIds: readonly string[] }
  | { kind: "subject"; userId: string };

/** Whether `access` covers spends of this subject and app. */
export function covers(access: SpendAccess, userId: string, appId: string): boolean {
  switch (access.kind) {
    case "all":
      return true;
    case "apps":
      return access.appIds.includes(appId);
    case "subject":
      return access.userId === userId;
  }
}

export const appNotAllowed = (appId: string) => permissionDenied("APP_NOT_ALLOWED", "the credential is not bound to this app", { metadata: { appId } });

/** 403 APP_NOT_ALLOWED unless `access` may spend for `appId` (a user never spends: the role table keeps them out). */
export function requireApp(access: SpendAccess, appId: string): void {
  if (access.kind === "apps" && !access.appIds.includes(appId)) throw appNotAllowed(appId);
  if (access.kind === "subject") throw appNotAllowed(appId);
}

/** The subject and app filters a List may run with, or 403 for a filter outside `access`. */
export function listScope(access: SpendAccess, userId: string | undefined, appId: string | undefined): { userIds: string[] | null; appIds: string[] | null } {
  switch (access.kind) {
    case "all":
      return { userIds: userId ? [userId] : null, appIds: appId ? [appId] : null };
    case "apps":
      if (appId && !access.appIds.includes(appId)) throw appNotAllowed(appId);
      return { userIds: userId ? [userId] : null, appIds: appId ? [appId] : [...access.appIds].sort() };
    case "subject":
      if (userId && userId !== access.userId) {
        throw permissionDenied("SUBJECT_NOT_ALLOWED", "a user may list only their own authorizations", { metadata: { userId } });
      }
      return { userIds: [access.userId], appIds: appId ? [appId] : null };
  }
}
