// The steps of an automation: add, reorder and remove steps, each CEL expression checked by the
// server (CheckAutomationSteps, the same checks as a save) against a sample payload as it is typed,
// with its problem or its value shown under it (the sample is a webhook body, or a fund event for a
// fund-event trigger). The notification secret of `notify` steps is shown once and can be rotated.
import { useEffect, useRef, useState } from "preact/hooks";
import { call, type Schemas, type Session } from "../api.js";
import { ErrorText, Field, Json, OnceSecret, Outcome, useAction } from "../components.js";
import { parseAmount } from "../money.js";
import { messageWords, STEP_KINDS } from "../words.js";
import { fundEventExample } from "../fund-event-example.js";
import { exampleUserId } from "../users.js";
import { exampleBody } from "../webhook-example.js";
import { sampleDelivery } from "../listener-kinds.js";
import { webhookOf } from "./trigger.js";

type Webhook = Schemas["IncomingWebhookTrigger"];

type Step = Schemas["AutomationStep"];
type Report = Schemas["AutomationServiceCheckAutomationStepsResponse"];
type Kind = keyof typeof STEP_KINDS;


interface Draft {
  key: number;
  kind: Kind;
  stepName: string;
  skipIfTrueCel: string;
  expressions: { name: string; expression: string }[];
  userIdCel: string;
  appIdCel: string;
  reasonCel: string;
  expiresAtCel: string;
  /** For the extension: `unlimited`, or an amount in the fund currency. */
  extensionAmount: string;
  /** For a notification: where it is posted, and its body. */
  url: string;
  bodyCel: string;
}

let keys = 0;

function blank(kind: Kind, index: number): Draft {
  return {
    key: ++keys,
    kind,
    stepName: `step${index + 1}`,
    skipIfTrueCel: "",
    expressions: [{ name: "value", expression: "ctx.trigger" }],
    userIdCel: "ctx.trigger.userId",
    appIdCel: "ctx.trigger.appId",
    reasonCel: "",
    expiresAtCel: "ctx.trigger.until",
    extensionAmount: "",
    url: "https://",
    bodyCel: "ctx.trigger",
  };
}

function fromStep(step: Step): Draft {
  const d = blank("evaluateExpressions", 0);
  d.stepName = step.stepName;
  d.skipIfTrueCel = step.skipIfTrueCel ?? "";
  if ("evaluateExpressions" in step && step.evaluateExpressions) d.expressions = step.evaluateExpressions.expressions.map((e) => ({ ...e }));
  else if ("suspendAppLimit" in step && step.suspendAppLimit) Object.assign(d, { kind: "suspendAppLimit", ...step.suspendAppLimit });
  else if ("unsuspendAppLimit" in step && step.unsuspendAppLimit) Object.assign(d, { kind: "unsuspendAppLimit", ...step.unsuspendAppLimit });
  else if ("setAppLimitExtension" in step && step.setAppLimitExtension) {
    const { limit, ...cel } = step.setAppLimitExtension;
    const money = "amount" in limit && limit.amount ? limit.amount.money : null;
    const fraction = money ? String(money.nanos ?? 0).padStart(9, "0").replace(/0+$/, "") : "";
    Object.assign(d, { kind: "setAppLimitExtension", ...cel, extensionAmount: money ? `${money.units}${fraction ? `.${fraction}` : ""}` : "unlimited" });
  }
  else if ("notify" in step && step.notify) Object.assign(d, { kind: "notify", ...step.notify });
  return d;
}

/** The contract's step of a draft (an amount that does not parse throws, shown next to Save). */
function toStep(d: Draft, currencyCode: string) {
  const base = { stepName: d.stepName, ...(d.skipIfTrueCel.trim() ? { skipIfTrueCel: d.skipIfTrueCel } : {}) };
  const reason = d.reasonCel.trim() ? { reasonCel: d.reasonCel } : {};
  switch (d.kind) {
    case "evaluateExpressions":
      return { ...base, evaluateExpressions: { expressions: d.expressions } };
    case "suspendAppLimit":
      return { ...base, suspendAppLimit: { userIdCel: d.userIdCel, appIdCel: d.appIdCel, ...reason } };
    case "unsuspendAppLimit":
      return { ...base, unsuspendAppLimit: { userIdCel: d.userIdCel, appIdCel: d.appIdCel } };
    case "notify":
      return { ...base, notify: { url: d.url, bodyCel: d.bodyCel } };
    case "setAppLimitExtension": {
      const unlimited = d.extensionAmount.trim().toLowerCase() === "unlimited";
      const limit = unlimited ? ({ unlimited: {} } as const) : { amount: { money: parseAmount(d.extensionAmount, currencyCode) } };
      return { ...base, setAppLimitExtension: { userIdCel: d.userIdCel, appIdCel: d.appIdCel, limit, expiresAtCel: d.expiresAtCel, ...reason } };
    }
  }
}

/** Sends the steps and sample to CheckAutomationSteps shortly after the last keystroke; keeps the latest answer. */
function useCheck(session: Session, drafts: Draft[], sample: string, webhook: Webhook | undefined) {
  const [report, setReport] = useState<Report | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [sampleError, setSampleError] = useState<string | null>(null);
  const sequence = useRef(0);
  useEffect(() => {
    const mine = ++sequence.current;
    const timer = window.setTimeout(() => {
      let samplePayload: unknown;
      let hasSample = false;
      try {
        samplePayload = JSON.parse(sample);
        hasSample = true;
        setSampleError(null);
      } catch {
        setSampleError("The sample payload is not valid JSON: expressions are checked but not evaluated.");
      }
      let automationSteps: ReturnType<typeof toStep>[];
      try {
        automationSteps = drafts.map((d) => toStep(d, session.currencyCode));
      } catch (e) {
        setError(e);
        return;
      }
      // A webhook's steps read the delivery too: the sample is checked as one delivered to this listener.
      const sampleWebhook = hasSample && webhook ? { sampleWebhook: sampleDelivery(webhook, samplePayload) } : {};
      call(session.client.POST("/api/v1/automation-steps/check", { body: { automationSteps, ...(hasSample ? { samplePayload } : {}), ...sampleWebhook } })).then(
        (r) => mine === sequence.current && (setReport(r), setError(null)),
        (e: unknown) => mine === sequence.current && setError(e),
      );
    }, 300);
    return () => window.clearTimeout(timer);
  }, [drafts, sample]);
  return { report, error, sampleError };
}

function CelInput(props: { label: string; path: string; value: string; onInput: (v: string) => void; report: Report | null; placeholder?: string }) {
  const problem = props.report?.problems.find((p) => p.path === props.path);
  const evaluation = props.report?.evaluations.find((e) => e.path === props.path);
  return (
    <div class="cel">
      <Field label={props.label}>
        <input class="code" spellcheck={false} value={props.value} placeholder={props.placeholder} aria-invalid={problem ? "true" : undefined} onInput={(e) => props.onInput(e.currentTarget.value)} />
      </Field>
      {problem ? (
        <p class="error" role="alert" data-path={props.path}>
          {messageWords(problem.path, problem.message)}
        </p>
      ) : evaluation ? (
        evaluation.error !== null ? (
          <p class="warning" data-path={props.path}>
            With the sample: {evaluation.error}
          </p>
        ) : (
          <p class="value" data-path={props.path}>
            = <code>{JSON.stringify(evaluation.value)}</code>
          </p>
        )
      ) : null}
    </div>
  );
}

export function StepsEditor({ session, automation, onSaved }: { session: Session; automation: Schemas["Automation"]; onSaved: (a: Schemas["Automation"]) => void }) {
  const [drafts, setDrafts] = useState<Draft[]>(() => (automation.automationSteps ?? []).map(fromStep));
  const [sample, setSample] = useState(() => {
    const userId = exampleUserId(session.names);
    return JSON.stringify(automation.triggers?.[0]?.fundEvents ? fundEventExample(userId) : JSON.parse(exampleBody(userId)), null, 2);
  });
  const [newKind, setNewKind] = useState<Kind>("evaluateExpressions");
  const { report, error, sampleError } = useCheck(session, drafts, sample, webhookOf(automation));
  const [notificationSecret, setNotificationSecret] = useState<string | null>(null);
  const save = useAction(async () => {
    const automationSteps = drafts.map((d) => toStep(d, session.currencyCode));
    const answer = await call(
      session.client.POST("/api/v1/automations/{id}", { params: { path: { id: automation.id ?? "" } }, body: { automation: { displayName: automation.displayName, automationSteps }, updateMask: "automationSteps" } }),
    );
    onSaved(answer.automation);
    if (answer.notificationSecret) setNotificationSecret(answer.notificationSecret);
    const count = answer.automation.automationSteps?.length ?? 0;
    return `Steps saved: ${count === 1 ? "one step" : `${count} steps`}.`;
  });
  // A change after the save: "saved" no longer holds.
  useEffect(() => save.clear(), [drafts]);
  const rotate = useAction(async () => {
    const answer = await call(session.client.POST("/api/v1/automations/{id}/notification-secret", { params: { path: { id: automation.id ?? "" } }, body: {} }));
    onSaved(answer.automation);
    setNotificationSecret(answer.notificationSecret);
    return "Notification secret rotated: the new one is shown once, above.";
  });
  const notifies = (automation.automationSteps ?? []).some((step) => "notify" in step && step.notify);

  const update = (i: number, change: Partial<Draft>) => setDrafts((ds) => ds.map((d, j) => (j === i ? { ...d, ...change } : d)));
  const move = (i: number, by: number) =>
    setDrafts((ds) => {
      const next = [...ds];
      const [d] = next.splice(i, 1);
      next.splice(i + by, 0, d!);
      return next;
    });
  // Problems that no expression input shows: step names, expression names, the extension's limit.
  const stepProblems = (i: number) => report?.problems.filter((p) => p.path.startsWith(`automationSteps[${i}].`) && !/(Cel|\.expression)$/.test(p.path)) ?? [];

  return (
    <section aria-label="Steps">
      <h2>Steps</h2>
      <Field label="Sample payload (ctx.trigger)" hint="Expressions are checked and evaluated against it as you type; nothing is run.">
        <textarea class="code" rows={4} spellcheck={false} value={sample} onInput={(e) => setSample(e.currentTarget.value)} />
      </Field>
      {sampleError ? <p class="warning">{sampleError}</p> : null}
      <ErrorText error={error} />
      {report ? <p class={report.valid ? "ok" : "error"}>{report.valid ? "The steps pass the checks of a save." : `${report.problems.length} problem(s): a save would be refused.`}</p> : null}
      <ol class="steps">
        {drafts.map((d, i) => {
          const at = `automationSteps[${i}]`;
          const cel = (label: string, field: keyof Draft & string, placeholder?: string) => (
            <CelInput label={label} path={`${at}.${d.kind}.${field}`} value={d[field] as string} onInput={(v) => update(i, { [field]: v })} report={report} placeholder={placeholder} />
          );
          return (
            <li key={d.key} class="step" aria-label={`Step ${i + 1}`}>
              <div class="row">
                <Field label="Step name">
                  <input class="code" value={d.stepName} onInput={(e) => update(i, { stepName: e.currentTarget.value })} />
                </Field>
                <span class="kind">{STEP_KINDS[d.kind]}</span>
                <div class="actions">
                  <button type="button" disabled={i === 0} onClick={() => move(i, -1)} aria-label={`Move step ${i + 1} up`}>
                    ↑
                  </button>
                  <button type="button" disabled={i === drafts.length - 1} onClick={() => move(i, 1)} aria-label={`Move step ${i + 1} down`}>
                    ↓
                  </button>
                  <button type="button" onClick={() => setDrafts((ds) => ds.filter((_, j) => j !== i))} aria-label={`Remove step ${i + 1}`}>
                    Remove
                  </button>
                </div>
              </div>
              {stepProblems(i).map((p) => (
                <p class="error" role="alert">
                  {messageWords(p.path, p.message)}
                </p>
              ))}
              <CelInput label="Skip if true (CEL, optional)" path={`${at}.skipIfTrueCel`} value={d.skipIfTrueCel} onInput={(v) => update(i, { skipIfTrueCel: v })} report={report} placeholder="e.g. !ctx.steps.parse.isLost" />
              {d.kind === "evaluateExpressions" ? (
                <div class="expressions">
                  {d.expressions.map((e, j) => (
                    <div class="row" key={j}>
                      <Field label="Name">
                        <input class="code short" value={e.name} onInput={(ev) => update(i, { expressions: d.expressions.map((x, k) => (k === j ? { ...x, name: ev.currentTarget.value } : x)) })} />
                      </Field>
                      <CelInput
                        label="Expression (CEL)"
                        path={`${at}.evaluateExpressions.expressions[${j}].expression`}
                        value={e.expression}
                        onInput={(v) => update(i, { expressions: d.expressions.map((x, k) => (k === j ? { ...x, expression: v } : x)) })}
                        report={report}
                      />
                      <button type="button" disabled={d.expressions.length === 1} onClick={() => update(i, { expressions: d.expressions.filter((_, k) => k !== j) })}>
                        Remove expression
                      </button>
                    </div>
                  ))}
                  <button type="button" onClick={() => update(i, { expressions: [...d.expressions, { name: `value${d.expressions.length + 1}`, expression: "" }] })}>
                    Add expression
                  </button>
                </div>
              ) : d.kind === "notify" ? (
                <div class="grid">
                  <Field label="URL (https)">
                    <input class="code" value={d.url} onInput={(e) => update(i, { url: e.currentTarget.value })} />
                  </Field>
                  {cel("Body (CEL, any JSON value)", "bodyCel", 'e.g. {"userId": ctx.trigger.userId}')}
                </div>
              ) : (
                <div class="grid">
                  {cel("User id (CEL)", "userIdCel")}
                  {cel("App id (CEL)", "appIdCel")}
                  {d.kind === "setAppLimitExtension" ? cel("Expires at (CEL)", "expiresAtCel", "e.g. timestamp(ctx.trigger.until)") : null}
                  {d.kind === "setAppLimitExtension" ? (
                    <Field label={`Extension limit (${session.currencyCode} amount, or "unlimited")`}>
                      <input value={d.extensionAmount} onInput={(e) => update(i, { extensionAmount: e.currentTarget.value })} />
                    </Field>
                  ) : null}
                  {d.kind !== "unsuspendAppLimit" ? cel("Reason (CEL, optional)", "reasonCel", 'e.g. "Card reported lost"') : null}
                </div>
              )}
            </li>
          );
        })}
      </ol>
      <div class="row">
        <Field label="New step">
          <select value={newKind} onChange={(e) => setNewKind(e.currentTarget.value as Kind)}>
            {Object.entries(STEP_KINDS).map(([k, label]) => (
              <option value={k}>{label}</option>
            ))}
          </select>
        </Field>
        <button type="button" onClick={() => setDrafts((ds) => [...ds, blank(newKind, ds.length)])}>
          Add step
        </button>
      </div>
      <div class="actions">
        <button type="button" class="primary" disabled={save.busy} onClick={() => void save.run()}>
          Save steps
        </button>
      </div>
      <Outcome action={save} />
      {notificationSecret ? (
        <OnceSecret label="Notification signing secret" value={notificationSecret} testId="notification-secret" then="Receivers verify notifications with it (Standard Webhooks)." />
      ) : null}
      {notifies ? (
        <div class="actions">
          <button type="button" disabled={rotate.busy} onClick={() => void rotate.run()}>
            Rotate notification secret
          </button>
          <span class="hint">The secret it replaces keeps signing beside the new one for a grace period.</span>
        </div>
      ) : null}
      <Outcome action={rotate} />
      {report && report.evaluations.length > 0 ? (
        <details>
          <summary>Every value with the sample</summary>
          <Json value={report.evaluations} />
        </details>
      ) : null}
    </section>
  );
}
