// The fund-event trigger: the form that chooses the event types (those the contract enumerates),
// the usage thresholds (asked only with the usage-threshold type, which requires them and alone
// admits them) and the optional CEL condition, and the panel that shows them on an automation.
// The server checks the rest (ranges, repeats, the condition's CEL) and its answer is shown.
import { FundEventTypeValues, type KnownFundEventType } from "../../../generated/enums.js";
import type { Schemas } from "../api.js";
import { Field } from "../components.js";

type FundEvents = Schemas["FundEventTrigger"];

export const THRESHOLD_TYPE: KnownFundEventType = "FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED";

/** The types a trigger may listen to: every value of the contract's enumeration but the zero value. */
const EVENT_TYPES: readonly string[] = FundEventTypeValues.filter((t) => t !== "FUND_EVENT_TYPE_UNSPECIFIED");

/** "FUND_EVENT_TYPE_SPEND_DECLINED" as "Spend declined"; a type this console does not know, the same way. */
export function eventTypeLabel(type: string): string {
  const words = type.replace(/^FUND_EVENT_TYPE_/, "").toLowerCase().replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export interface FundEventsDraft {
  eventTypes: string[];
  /** As typed: whole percents separated by commas or spaces. */
  thresholds: string;
  conditionCel: string;
}

export function fundEventsDraftOf(trigger: FundEvents | null | undefined): FundEventsDraft {
  return { eventTypes: [...(trigger?.eventTypes ?? [])], thresholds: (trigger?.usageThresholdPercents ?? []).join(", "), conditionCel: trigger?.conditionCel ?? "" };
}

/** Thresholds as typed ("80, 100", "80% 95%"); anything but whole numbers throws, shown next to Save. */
function percentsOf(text: string): number[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((item) => {
      const digits = item.replace(/%$/, "");
      if (!/^\d+$/.test(digits)) throw new Error(`Usage thresholds: "${item}" is not a whole percent (write e.g. 80, 100).`);
      return Number(digits);
    });
}

export function fundEventsOf(draft: FundEventsDraft): FundEvents {
  const thresholds = draft.eventTypes.includes(THRESHOLD_TYPE) ? { usageThresholdPercents: percentsOf(draft.thresholds) } : {};
  return { eventTypes: draft.eventTypes, ...thresholds, ...(draft.conditionCel.trim() ? { conditionCel: draft.conditionCel } : {}) };
}

export function FundEventInputs({ draft, onChange }: { draft: FundEventsDraft; onChange: (d: FundEventsDraft) => void }) {
  // A type the server answered that this console does not know stays listed, and kept unless unchecked.
  const choices = [...EVENT_TYPES, ...draft.eventTypes.filter((t) => !EVENT_TYPES.includes(t))];
  const toggle = (type: string, on: boolean) => onChange({ ...draft, eventTypes: choices.filter((t) => (t === type ? on : draft.eventTypes.includes(t))) });
  return (
    <fieldset>
      <legend>Fund-event trigger</legend>
      <div class="choices" role="group" aria-label="Event types">
        {choices.map((type) => (
          <label class="choice" key={type}>
            <input type="checkbox" value={type} checked={draft.eventTypes.includes(type)} onChange={(e) => toggle(type, e.currentTarget.checked)} /> {eventTypeLabel(type)}
          </label>
        ))}
      </div>
      {draft.eventTypes.includes(THRESHOLD_TYPE) ? (
        <Field label="Usage thresholds (%)" hint="Whole percents of the window's amount limit, 1 to 100, e.g. 80, 100. Each fires once per subject, app and spend window.">
          <input required inputMode="numeric" value={draft.thresholds} placeholder="e.g. 80, 100" onInput={(e) => onChange({ ...draft, thresholds: e.currentTarget.value })} />
        </Field>
      ) : null}
      <Field
        label="Condition (CEL, optional)"
        hint={
          <>
            A bool over <code>ctx.trigger</code>, the event. Empty: every event of the chosen types.
          </>
        }
      >
        <input class="code" spellcheck={false} maxLength={4096} value={draft.conditionCel} placeholder='e.g. ctx.trigger.appId == "app-salesforce"' onInput={(e) => onChange({ ...draft, conditionCel: e.currentTarget.value })} />
      </Field>
    </fieldset>
  );
}

/** One line for lists: "Fund events: Usage threshold crossed (80 %, 100 %)". */
export function fundEventsSummary(trigger: FundEvents): string {
  const thresholds = trigger.usageThresholdPercents?.length ? ` (${trigger.usageThresholdPercents.map((p) => `${p} %`).join(", ")})` : "";
  return `Fund events: ${trigger.eventTypes.map(eventTypeLabel).join(", ")}${thresholds}`;
}

export function FundEventsPanel({ trigger }: { trigger: FundEvents }) {
  return (
    <section class="panel" aria-label="Fund events">
      <dl class="controls">
        <dt>Runs on</dt>
        <dd>
          <ul class="plain" data-testid="event-types">
            {trigger.eventTypes.map((type) => (
              <li key={type} title={type}>
                {eventTypeLabel(type)}
              </li>
            ))}
          </ul>
        </dd>
        {trigger.usageThresholdPercents?.length ? (
          <>
            <dt>Usage thresholds</dt>
            <dd data-testid="usage-thresholds">{trigger.usageThresholdPercents.map((p) => `${p} %`).join(", ")}</dd>
          </>
        ) : null}
        <dt>Condition</dt>
        <dd data-testid="condition">{trigger.conditionCel ? <code>{trigger.conditionCel}</code> : "None: every event of these types"}</dd>
      </dl>
    </section>
  );
}
