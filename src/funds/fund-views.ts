// The funds shapes as answers carry them: every field the contract declares is present, null where
// there is no value (an unset oneof arm, no extension, no suspension), "" for a string with none and
// PERIOD_KIND_UNSPECIFIED for no period. Stored controls stay compact (./controls.ts); these are
// the only functions that turn them into API objects.
import { limitKind } from "./spends/spend-limit.js";
import type { SpendControls, SpendControlsView, SpendExtension, SpendExtensionView, SpendLimit, SpendLimitView, SpendSuspension, SpendSuspensionView } from "./types.js";

export function spendLimitView(limit: SpendLimit): SpendLimitView {
  switch (limitKind(limit)) {
    case "amount":
      return { amount: { money: limit.amount?.money ?? null }, blocked: null, unlimited: null };
    case "blocked":
      return { amount: null, blocked: {}, unlimited: null };
    case "unlimited":
      return { amount: null, blocked: null, unlimited: {} };
  }
}

export const extensionView = (extension: SpendExtension): SpendExtensionView => ({
  limit: extension.limit ? spendLimitView(extension.limit) : null,
  expiresAt: extension.expiresAt ?? null,
  reason: extension.reason ?? "",
});

export const suspensionView = (suspension: SpendSuspension): SpendSuspensionView => ({
  reason: suspension.reason ?? "",
  suspendedAt: suspension.suspendedAt ?? null,
});

export const controlsView = (controls: SpendControls): SpendControlsView => ({
  limit: controls.limit ? spendLimitView(controls.limit) : null,
  period: (controls.limit && controls.period) || "PERIOD_KIND_UNSPECIFIED",
  extension: controls.extension ? extensionView(controls.extension) : null,
  suspension: controls.suspension ? suspensionView(controls.suspension) : null,
  perAuthorization: controls.perAuthorization ?? null,
  maxAuthorizations: controls.maxAuthorizations ?? null,
});
