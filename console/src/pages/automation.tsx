// One automation: its state (publish, unpublish, the trigger toggle), its trigger (a webhook's
// listener: URL, secret once, what its sender is set up with, rotate; or its fund events), its
// steps, and its delivery log (or, on fund events, its executions), and, once published,
// redriving its failed executions.
import { useEffect, useState } from "preact/hooks";
import { call, type Schemas, type Session } from "../api.js";
import { ConfirmPanel, ErrorText, Outcome, useAction } from "../components.js";
import { href, navigate } from "../route.js";
import { AUTOMATION_LIST, handOver, takeHandover } from "../secrets.js";
import { exampleUserId } from "../users.js";
import { DeliveryLog, ExecutionLog } from "./deliveries.js";
import { RotateSecret } from "./listener.js";
import { stateLabel } from "./automations.js";
import { BulkRedrive } from "./redrive.js";
import { StepsEditor } from "./steps.js";
import { draftOf, triggerOf, TriggerInputs, TriggerPanel, triggerSummary, webhookOf } from "./trigger.js";

type Automation = Schemas["Automation"];
type Mask = "isDraft" | "enabled" | "triggers";
type Change = { isDraft?: boolean; enabled?: boolean; triggers?: ReturnType<typeof triggerOf>[] };

export function AutomationPage({ session, id }: { session: Session; id: string }) {
  const [automation, setAutomation] = useState<Automation | null>(null);
  // What the creating form hands over, once: the secret it was issued, and what it did.
  const [created] = useState(() => takeHandover(id));
  const [secret, setSecret] = useState<string | undefined>(created?.secret);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [editingTrigger, setEditingTrigger] = useState(false);
  const [trigger, setTrigger] = useState(draftOf(undefined));
  const path = { params: { path: { id } } };

  useEffect(() => {
    call(session.client.GET("/api/v1/automations/{id}", path)).then((r) => setAutomation(r.automation), setLoadError);
  }, [id]);

  const save = async (change: Change, updateMask: Mask) => {
    const saved = await call(session.client.POST("/api/v1/automations/{id}", { ...path, body: { automation: { displayName: automation?.displayName ?? "", ...change }, updateMask } }));
    setAutomation(saved.automation);
    if (saved.webhookSecret) setSecret(saved.webhookSecret);
    setEditingTrigger(false);
    return saved.automation;
  };
  const update = useAction(async (change: Change, updateMask: Mask) => {
    const saved = await save(change, updateMask);
    return updateMask === "isDraft" ? (saved.isDraft === false ? "Published." : "Unpublished: back to a draft.") : `Trigger turned ${saved.enabled === false ? "off" : "on"}.`;
  });
  // The draft is read inside the action: one that cannot be sent (thresholds typed wrong) is shown as its error.
  const saveTrigger = useAction(async () => `Trigger saved: ${triggerSummary(await save({ triggers: [triggerOf(trigger)] }, "triggers"))}.`);
  const [deleting, setDeleting] = useState(false);
  const remove = useAction(async () => {
    await call(session.client.DELETE("/api/v1/automations/{id}", path));
    handOver(AUTOMATION_LIST, { said: `Automation deleted: ${automation?.displayName ?? id}.` });
    navigate("automations");
  });

  if (loadError) return <ErrorText error={loadError} />;
  if (!automation) return <p>Loading…</p>;
  const webhook = webhookOf(automation);
  const published = automation.isDraft === false;
  const enabled = automation.enabled !== false;
  const onFundEvents = !!automation.triggers?.[0]?.fundEvents;

  return (
    <article>
      <p>
        <a href={href("automations")}>← Automations</a>
      </p>
      <header class="bar">
        <h1>{automation.displayName}</h1>
        <span class="badge" data-testid="automation-state">
          {stateLabel(automation)}
        </span>
      </header>
      {automation.description ? <p>{automation.description}</p> : null}
      <div class="actions">
        <button type="button" class="primary" disabled={update.busy} onClick={() => void update.run({ isDraft: published }, "isDraft")}>
          {published ? "Unpublish" : "Publish"}
        </button>
        <button type="button" disabled={update.busy} onClick={() => void update.run({ enabled: !enabled }, "enabled")}>
          {enabled ? "Turn trigger off" : "Turn trigger on"}
        </button>
        <button type="button" class="danger" disabled={deleting} onClick={() => setDeleting(true)}>
          Delete
        </button>
      </div>
      {deleting ? (
        <ConfirmPanel
          title={`Delete ${automation.displayName}?`}
          confirm="Delete"
          danger
          busy={remove.busy}
          error={remove.error}
          onConfirm={() => void remove.run()}
          onCancel={() => setDeleting(false)}
        >
          <p>
            {webhook ? "Its webhook URL stops working at once (events sent to it are answered 404), and its delivery log goes with it. " : ""}
            {onFundEvents ? "Fund events start it no more. " : ""}The executions it already has stay readable through the API.
          </p>
        </ConfirmPanel>
      ) : null}
      {published && enabled ? null : (
        <p class="hint">{onFundEvents ? "Fund events start nothing" : "Events are accepted but not run"} until the automation is published and its trigger is on.</p>
      )}
      <Outcome action={update.error || update.done ? update : { error: null, done: created?.said ?? "" }} />

      <section aria-label="Trigger">
        <h2>Trigger</h2>
        <TriggerPanel trigger={automation.triggers?.[0]} secret={secret} exampleUserId={exampleUserId(session.names)} />
        {webhook ? (
          <RotateSecret
            session={session}
            automationId={id}
            webhook={webhook}
            onRotated={(rotated, issued) => {
              setAutomation(rotated);
              setSecret(issued);
            }}
          />
        ) : null}
        <div class="actions">
          <button
            type="button"
            onClick={() => {
              setTrigger(draftOf(automation.triggers?.[0]));
              saveTrigger.clear();
              setEditingTrigger(!editingTrigger);
            }}
          >
            {editingTrigger ? "Cancel" : automation.triggers?.length ? "Change trigger" : "Add trigger"}
          </button>
        </div>
        {/* The form closes on a save: what it did is said here, its refusals in the form. */}
        <Outcome action={{ error: null, done: saveTrigger.done }} />
        {editingTrigger ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void saveTrigger.run();
            }}
          >
            <TriggerInputs draft={trigger} onChange={setTrigger} hasListener={webhook !== undefined} />
            <button type="submit" disabled={saveTrigger.busy}>
              Save trigger
            </button>
            <ErrorText error={saveTrigger.error} />
          </form>
        ) : null}
      </section>

      <StepsEditor session={session} automation={automation} onSaved={setAutomation} />
      {published ? <BulkRedrive session={session} automationId={id} /> : null}
      {onFundEvents ? <ExecutionLog session={session} automationId={id} /> : <DeliveryLog session={session} automationId={id} />}
    </article>
  );
}
