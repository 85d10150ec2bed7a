// Controls of a limit row and the effective limit with its resolution trace and the current
// window's usage, as shown for a subject's row, for the caller's own rows, for app caps and the policy.
import type { Schemas } from "../api.js";
import { When } from "../components.js";
import { formatLimitPer, formatMoney } from "../money.js";
import { UsageView } from "./spends.js";

const words = (value: string | null | undefined, prefix: string) => (value ? value.replace(prefix, "").toLowerCase().replace(/_/g, " ") : "—");

export function ControlsView({ controls }: { controls: Schemas["SpendControls"] | null | undefined }) {
  if (!controls) return <p>No controls.</p>;
  return (
    <dl class="controls">
      <dt>Limit</dt>
      <dd data-testid="controls-limit">
        {formatLimitPer(controls.limit, controls.period)}
      </dd>
      <dt>Extension</dt>
      <dd data-testid="controls-extension">
        {controls.extension ? (
          <>
            {/* An extension replaces the total, never the period. */}
            {formatLimitPer(controls.extension.limit, controls.period)} until <When at={controls.extension.expiresAt} />
            {controls.extension.reason ? ` (${controls.extension.reason})` : ""}
          </>
        ) : (
          "none"
        )}
      </dd>
      <dt>Cap per authorization</dt>
      <dd data-testid="controls-per-authorization">{controls.perAuthorization ? formatMoney(controls.perAuthorization) : "none"}</dd>
      <dt>Authorizations per window</dt>
      <dd data-testid="controls-max-authorizations">{controls.maxAuthorizations ?? "none"}</dd>
      <dt>Suspension</dt>
      <dd data-testid="controls-suspension">
        {controls.suspension ? (
          <>
            suspended <When at={controls.suspension.suspendedAt} />
            {controls.suspension.reason ? ` (${controls.suspension.reason})` : ""}
          </>
        ) : (
          "none"
        )}
      </dd>
    </dl>
  );
}

export function EffectiveView({ effective }: { effective: Schemas["EffectiveLimit"] | null }) {
  if (!effective) return null;
  return (
    <section class="panel" aria-label="Effective limit">
      <h3>Effective limit</h3>
      <p>
        <strong data-testid="effective-decision">{words(effective.decision, "EFFECTIVE_DECISION_")}</strong>
        {effective.limit ? ` · ${formatLimitPer(effective.limit, effective.period)}` : ""}
        {effective.perAuthorization ? ` · at most ${formatMoney(effective.perAuthorization)} per authorization` : ""}
        {effective.maxAuthorizations ? ` · at most ${effective.maxAuthorizations} authorization${effective.maxAuthorizations === 1 ? "" : "s"} per window` : ""} · by {words(effective.scope, "SCOPE_")} ({words(effective.cause, "CAUSE_")})
      </p>
      <ol class="trace" aria-label="Resolution trace">
        {effective.trace.map((line) => (
          <li>
            <code>{line}</code>
          </li>
        ))}
      </ol>
      <UsageView usage={effective.usage} />
      <p class="hint">
        Evaluated at <When at={effective.evaluatedAt} />.
      </p>
    </section>
  );
}
