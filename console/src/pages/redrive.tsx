// Redrive failed executions (AutomationExecutionService.BulkRedrive) from an automation's page: a
// range of creation times and whether parked ones are made due too, after a confirmation; the
// answer's counts, and Continue while the answer has a continuation token.
import { useState } from "preact/hooks";
import { call, type Schemas, type Session } from "../api.js";
import { ErrorText, Field, newKey, useAction, When } from "../components.js";

type Answer = Schemas["AutomationExecutionServiceBulkRedriveResponse"];
interface Range {
  since: string;
  until: string;
  includeParked: boolean;
}

/** An RFC 3339 instant as typed, or an error naming the field (the server checks the range itself). */
function instant(label: string, text: string): string {
  const value = text.trim();
  if (!value || Number.isNaN(Date.parse(value))) throw new Error(`${label}: an RFC 3339 date-time, such as 2026-01-10T06:00:00Z.`);
  return value;
}

const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d+Z$/, "Z");
const nowText = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

export function BulkRedrive({ session, automationId }: { session: Session; automationId: string }) {
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState<Range>(() => ({ since: hourAgo(), until: nowText(), includeParked: true }));
  /** The range confirmed, sent with each call and its continuations. */
  const [asked, setAsked] = useState<Range | null>(null);
  const [answers, setAnswers] = useState<Answer[]>([]);
  const last = answers[answers.length - 1];

  const send = useAction(async (range: Range, continuationToken: string) => {
    const answer = await call(
      session.client.POST("/api/v1/automations/{id}/executions/redrive", {
        params: { path: { id: automationId }, header: { "Idempotency-Key": newKey() } },
        body: { ...range, ...(continuationToken ? { continuationToken } : {}) },
      }),
    );
    setAnswers((a) => [...a, answer]);
  });
  const confirm = useAction(async () => {
    setAnswers([]);
    setAsked(null);
    send.setError(null);
    setAsked({ since: instant("Since", form.since), until: instant("Until", form.until), includeParked: form.includeParked });
  });
  const total = (k: "examinedCount" | "redrivenCount" | "madeDueCount" | "alreadyRedrivenCount") => answers.reduce((n, a) => n + a[k], 0);

  return (
    <section aria-label="Redrive failed executions">
      <h2>Redrive failed executions</h2>
      {!open ? (
        <button type="button" onClick={() => setOpen(true)}>
          Redrive failed executions…
        </button>
      ) : (
        <form
          class="panel"
          onSubmit={(e) => {
            e.preventDefault();
            void confirm.run();
          }}
        >
          <p class="hint">
            Runs again, once each, every failed execution of this automation created in the range (since included, until excluded, until not later than now), at the server's pace; with
            parked ones made due, they are tried now instead of at their next attempt.
          </p>
          <div class="row">
            <Field label="Since (RFC 3339)">
              <input value={form.since} onInput={(e) => setForm({ ...form, since: e.currentTarget.value })} />
            </Field>
            <Field label="Until (RFC 3339)">
              <input value={form.until} onInput={(e) => setForm({ ...form, until: e.currentTarget.value })} />
            </Field>
          </div>
          <label>
            <input type="checkbox" checked={form.includeParked} onChange={(e) => setForm({ ...form, includeParked: e.currentTarget.checked })} /> Also make parked executions due
          </label>
          <div class="actions">
            <button type="submit">Redrive…</button>
            <button
              type="button"
              onClick={() => {
                setOpen(false);
                setAsked(null);
                setAnswers([]);
              }}
            >
              Close
            </button>
          </div>
          <ErrorText error={confirm.error} />
        </form>
      )}
      {open && asked && answers.length === 0 ? (
        <section class="panel confirm" role="alertdialog" aria-label="Redrive these executions?">
          <h4>Redrive these executions?</h4>
          <p>
            Every failed execution created from <When at={asked.since} /> to <When at={asked.until} /> is run again with the automation's steps as they are now
            {asked.includeParked ? ", and the parked ones of the range are made due" : ""}.
          </p>
          <div class="actions">
            <button type="button" class="danger" disabled={send.busy} onClick={() => void send.run(asked, "")}>
              Redrive
            </button>
            <button type="button" autoFocus disabled={send.busy} onClick={() => setAsked(null)}>
              Cancel
            </button>
          </div>
        </section>
      ) : null}
      {open && asked && last ? (
        <div class="panel" role="status" data-testid="redrive-result">
          <p>
            {answers.length === 1 ? "One call" : `${answers.length} calls`}: looked at <strong data-testid="redrive-examined">{total("examinedCount")}</strong>, redriven{" "}
            <strong data-testid="redrive-redriven">{total("redrivenCount")}</strong>, parked ones made due <strong data-testid="redrive-made-due">{total("madeDueCount")}</strong>, already
            redriven <strong data-testid="redrive-already">{total("alreadyRedrivenCount")}</strong>.
          </p>
          <p>
            {last.lastAttemptAt ? (
              <>
                The last is due at <When at={last.lastAttemptAt} />.
              </>
            ) : (
              "Nothing was made due."
            )}
          </p>
          {last.continuationToken ? (
            <>
              <p>More executions of the range remain: the call stopped at its bound.</p>
              <button type="button" class="primary" disabled={send.busy} onClick={() => void send.run(asked, last.continuationToken)}>
                Continue
              </button>
            </>
          ) : (
            <p data-testid="redrive-complete">The whole range was looked at.</p>
          )}
        </div>
      ) : null}
      <ErrorText error={send.error} />
    </section>
  );
}
