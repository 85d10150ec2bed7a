// Small pieces every page uses: errors shown in words where they happened, copy buttons, paged
// lists, and the limit form (arm, amount, period) shared by rows, caps, the policy and my limits.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { bounds } from "../../generated/bounds.js";
import { PeriodKindValues } from "../../generated/enums.js";
import { describeError } from "./api.js";
import { parseAmount, type LimitArm } from "./money.js";

export function ErrorText({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return (
    <p class="error" role="alert">
      {describeError(error)}
    </p>
  );
}

/**
 * Runs an action, keeping whether it is running, its error, and what it did: an action that
 * writes returns its confirmation in words, which `Outcome` shows until the next run.
 */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<string | void>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState("");
  const run = useCallback(
    async (...args: A) => {
      setBusy(true);
      setError(null);
      setDone("");
      try {
        setDone((await action(...args)) ?? "");
      } catch (e) {
        setError(e);
      } finally {
        setBusy(false);
      }
    },
    [action],
  );
  /** Forgets the last run's error and what it did (what it said no longer holds). */
  const clear = useCallback(() => {
    setError(null);
    setDone("");
  }, []);
  return { run, busy, error, setError, done, clear };
}

/** Next to a form's button: the error of its last run, or what it did (a status region that screen readers announce). */
export function Outcome({ action }: { action: { error: unknown; done: string } }) {
  if (action.error) return <ErrorText error={action.error} />;
  return action.done ? (
    <p class="ok" role="status">
      {action.done}
    </p>
  ) : null;
}

async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  // Pages served over plain http to another host are not a secure context: fall back to a selection.
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "offscreen";
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  if (!ok) throw new Error("Copying was refused by the browser; select the text and copy it.");
}

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  return (
    <button
      type="button"
      class="copy"
      aria-label={label}
      onClick={() => copyText(text).then(() => setState("copied"), () => setState("failed"))}
    >
      {state === "copied" ? "Copied" : state === "failed" ? "Copy failed" : "Copy"}
    </button>
  );
}

/** A value to copy: shown in full, selectable, with its copy button. */
export function Copyable({ label, value, testId }: { label: string; value: string; testId: string }) {
  return (
    <div class="copyable">
      <span class="label">{label}</span>
      <code data-testid={testId}>{value}</code>
      <CopyButton text={value} label={`Copy ${label.toLowerCase()}`} />
    </div>
  );
}

/** A secret shown once, the moment it is issued: copy it now, `then` says what to do afterwards. */
export function OnceSecret({ label, value, testId, then }: { label: string; value: string; testId: string; then: string }) {
  return (
    <div class="secret">
      <Copyable label={label} value={value} testId={testId} />
      <p class="warning">Shown once: copy it now. {then}</p>
    </div>
  );
}

/** The error of a list, or the sentence saying it is empty. */
export function ListStatus({ error, loaded, count, empty }: { error: unknown; loaded: boolean; count: number; empty: string }) {
  if (error) return <ErrorText error={error} />;
  return loaded && count === 0 ? <p>{empty}</p> : null;
}

/**
 * A question before a write, next to what it acts on: nothing is sent before `onConfirm`, and
 * Cancel has the focus, so an Enter pressed by habit sends nothing.
 */
export function ConfirmPanel(props: {
  title: string;
  confirm: string;
  danger: boolean;
  busy: boolean;
  error: unknown;
  onConfirm: () => void;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  return (
    <section class="panel confirm" role="alertdialog" aria-label={props.title}>
      <h4>{props.title}</h4>
      {props.children}
      <div class="actions">
        <button type="button" class={props.danger ? "danger" : "primary"} disabled={props.busy} onClick={props.onConfirm}>
          {props.confirm}
        </button>
        <button type="button" autoFocus disabled={props.busy} onClick={props.onCancel}>
          Cancel
        </button>
      </div>
      <ErrorText error={props.error} />
    </section>
  );
}

/**
 * A table as wide as the page, its long cells wrapped; on a phone each row is a card. Each body
 * cell is labelled with its column's header (`data-label`, which the card shows before it), set
 * here after each render so that the pages' rows stay plain cells. The roles keep the table's
 * semantics where the stylesheet gives its parts another display.
 */
export function Table({ headers, children }: { headers: string[]; children: ComponentChildren }) {
  const body = useRef<HTMLTableSectionElement>(null);
  useLayoutEffect(() => {
    for (const row of Array.from(body.current?.rows ?? [])) {
      row.setAttribute("role", "row");
      Array.from(row.cells).forEach((cell, i) => {
        cell.setAttribute("role", "cell");
        cell.setAttribute("data-label", headers[i] ?? "");
      });
    }
  });
  return (
    <div class="table">
      <table role="table">
        <thead role="rowgroup">
          <tr role="row">
            {headers.map((h) => (
              <th role="columnheader" scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody role="rowgroup" ref={body}>
          {children}
        </tbody>
      </table>
    </div>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

export interface Page<T> {
  list: T[];
  nextPageToken: string;
}

/**
 * One page of a list at a time, with the tokens of the pages before it so that the reader can go
 * back. `refreshMs` reloads the current page while the view is open.
 */
export function usePaged<T>(load: (pageToken: string) => Promise<Page<T>>, refreshMs?: number) {
  const [tokens, setTokens] = useState<string[]>([""]);
  // The page shown, with its number: "Page 2" appears with page 2's rows, not while they load.
  const [shown, setShown] = useState<{ page: Page<T>; number: number } | null>(null);
  const page = shown?.page ?? null;
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const token = tokens[tokens.length - 1] ?? "";

  useEffect(() => {
    let live = true;
    const number = tokens.length;
    loadRef.current(token).then(
      (p) => live && (setShown({ page: p, number }), setError(null)),
      (e: unknown) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [token, tick]);

  useEffect(() => {
    if (!refreshMs) return undefined;
    const timer = window.setInterval(() => setTick((t) => t + 1), refreshMs);
    return () => window.clearInterval(timer);
  }, [refreshMs]);

  return {
    items: page?.list ?? [],
    loaded: page !== null,
    error,
    reload: () => setTick((t) => t + 1),
    pager: (
      <Pager
        page={shown?.number ?? tokens.length}
        hasPrevious={tokens.length > 1}
        hasNext={!!page?.nextPageToken}
        onPrevious={() => setTokens((t) => t.slice(0, -1))}
        // Only from the page shown: a second click before the next page arrives asks for nothing more.
        onNext={() => shown?.page.nextPageToken && setTokens((t) => (t.length === shown.number ? [...t, shown.page.nextPageToken] : t))}
      />
    ),
  };
}

function Pager(props: { page: number; hasPrevious: boolean; hasNext: boolean; onPrevious: () => void; onNext: () => void }) {
  if (!props.hasPrevious && !props.hasNext) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={!props.hasPrevious} onClick={props.onPrevious}>
        Previous page
      </button>
      <span>Page {props.page}</span>
      <button type="button" disabled={!props.hasNext} onClick={props.onNext}>
        Next page
      </button>
    </nav>
  );
}

export function Field({ label, children, hint }: { label: string; children: ComponentChildren; hint?: ComponentChildren }) {
  return (
    <label class="field">
      <span class="label">{label}</span>
      {children}
      {hint ? <span class="hint">{hint}</span> : null}
    </label>
  );
}

export interface LimitDraft {
  arm: LimitArm;
  amount: string;
  period: string;
  /** The cap on one authorization as typed; empty for none. */
  perAuthorization: string;
  /** The count of authorizations per window as typed; empty for none. */
  maxAuthorizations: string;
}

export const emptyLimitDraft: LimitDraft = { arm: "amount", amount: "", period: "PERIOD_KIND_MONTHLY", perAuthorization: "", maxAuthorizations: "" };

/** How many authorizations a window may be set to count: SpendControls.maxAuthorizations's bounds. */
const { minimum: MIN_AUTHORIZATIONS, maximum: MAX_AUTHORIZATIONS } = bounds.SpendControls.maxAuthorizations;

/** The draft's count per window as the API takes it: null when none is typed. */
function draftCount(text: string): number | null {
  const typed = text.trim();
  if (!typed) return null;
  const count = /^\d+$/.test(typed) ? Number(typed) : NaN;
  if (!(count >= MIN_AUTHORIZATIONS && count <= MAX_AUTHORIZATIONS)) throw new Error(`Enter a whole number of authorizations per window, from ${MIN_AUTHORIZATIONS} to ${MAX_AUTHORIZATIONS}.`);
  return count;
}

/** The draft's cap on one authorization and count per window as the API takes them: null for each not typed. */
export const draftCaps = (draft: LimitDraft, currencyCode: string) => ({
  perAuthorization: draft.perAuthorization.trim() ? parseAmount(draft.perAuthorization, currencyCode) : null,
  maxAuthorizations: draftCount(draft.maxAuthorizations),
});

/**
 * Inputs for a SpendLimit and its period; `arms` says which arms the scope accepts. `withCaps` adds
 * the cap on one authorization and the count per window, which the base limit's scopes set with it
 * (never an extension).
 */
export function LimitInputs(props: { draft: LimitDraft; onChange: (d: LimitDraft) => void; arms: readonly LimitArm[]; withPeriod: boolean; withCaps?: boolean; currencyCode: string }) {
  const { draft, onChange } = props;
  return (
    <div class="row">
      {props.arms.length > 1 ? (
        <Field label="Limit">
          <select value={draft.arm} onChange={(e) => onChange({ ...draft, arm: e.currentTarget.value as LimitArm })}>
            {props.arms.map((a) => (
              <option value={a}>{a}</option>
            ))}
          </select>
        </Field>
      ) : null}
      {draft.arm === "amount" ? (
        <Field label={`Amount (${props.currencyCode})`}>
          <input inputMode="decimal" value={draft.amount} placeholder="e.g. 250.00" onInput={(e) => onChange({ ...draft, amount: e.currentTarget.value })} />
        </Field>
      ) : null}
      {props.withPeriod && draft.arm === "amount" ? (
        <Field label="Period">
          <select value={draft.period} onChange={(e) => onChange({ ...draft, period: e.currentTarget.value })}>
            {PeriodKindValues.filter((p) => p !== "PERIOD_KIND_UNSPECIFIED").map((p) => (
              <option value={p}>{p.replace("PERIOD_KIND_", "").toLowerCase()}</option>
            ))}
          </select>
        </Field>
      ) : null}
      {props.withCaps ? (
        <>
          <Field label={`Cap per authorization (${props.currencyCode})`} hint="Leave empty for none.">
            <input inputMode="decimal" value={draft.perAuthorization} placeholder="e.g. 50.00" onInput={(e) => onChange({ ...draft, perAuthorization: e.currentTarget.value })} />
          </Field>
          <Field label="Authorizations per window" hint="A whole number; leave empty for none.">
            <input inputMode="numeric" value={draft.maxAuthorizations} placeholder="e.g. 20" onInput={(e) => onChange({ ...draft, maxAuthorizations: e.currentTarget.value })} />
          </Field>
        </>
      ) : null}
    </div>
  );
}

/** "2026-11-20T09:30:00Z" in the reader's time zone. */
export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span>—</span>;
  return <time dateTime={at}>{new Date(at).toLocaleString()}</time>;
}

/**
 * A search form's state: what is typed (`form`) and what was last searched (`filters`, with its
 * `generation`, a key that makes the results read anew even when the filters are the same).
 */
export function useSearch<F>(initial: F) {
  const [form, setForm] = useState<F>(initial);
  const [filters, setFilters] = useState<F>(initial);
  const [generation, setGeneration] = useState(0);
  /** Searches for `next`, shown in the form too (a filter chosen from the results). */
  const apply = (next: F) => {
    setForm(next);
    setFilters(next);
    setGeneration((g) => g + 1);
  };
  const submit = (e: Event) => {
    e.preventDefault();
    apply(form);
  };
  return { form, setForm, filters, generation, submit, apply };
}

/** A new Idempotency-Key (crypto.randomUUID needs a secure context; getRandomValues does not). */
export function newKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}
