// The automation list and the form that creates one with its trigger (an incoming webhook or fund events).
import { useState } from "preact/hooks";
import { call, type Schemas, type Session } from "../api.js";
import { ErrorText, Field, ListStatus, Outcome, Table, useAction, usePaged, When } from "../components.js";
import { href, navigate } from "../route.js";
import { AUTOMATION_LIST, handOver, takeHandover } from "../secrets.js";
import { draftOf, triggerOf, TriggerInputs, triggerSummary } from "./trigger.js";

export function stateLabel(a: Schemas["Automation"]): string {
  return `${a.isDraft === false ? "Published" : "Draft"}, trigger ${a.enabled === false ? "off" : "on"}`;
}

export function AutomationList({ session }: { session: Session }) {
  const { items, loaded, error, pager } = usePaged((page_token) => call(session.client.GET("/api/v1/automations", { params: { query: { page_size: 25, page_token } } })));
  const [said] = useState(() => takeHandover(AUTOMATION_LIST)?.said ?? "");
  return (
    <section>
      <header class="bar">
        <h1>Automations</h1>
        <a class="button" href={href("automations", "new")}>
          New automation
        </a>
      </header>
      <Outcome action={{ error: null, done: said }} />
      <ListStatus error={error} loaded={loaded} count={items.length} empty="No automations yet." />
      <Table headers={["Name", "State", "Trigger", "Last run"]}>
      {items.map(({ automation: a }) => (
        <tr key={a.id}>
          <td>
            <a href={href("automations", a.id ?? "")}>{a.displayName}</a>
          </td>
          <td>{stateLabel(a)}</td>
          <td data-testid="automation-trigger">{triggerSummary(a)}</td>
          <td>
            <When at={a.lastExecutedAt} />
          </td>
        </tr>
      ))}
      </Table>
      {pager}
    </section>
  );
}

export function NewAutomation({ session }: { session: Session }) {
  const [displayName, setName] = useState("");
  const [description, setDescription] = useState("");
  const [trigger, setTrigger] = useState(draftOf(undefined));
  const save = useAction(async () => {
    const saved = await call(
      session.client.POST("/api/v1/automations", {
        body: { automation: { displayName: displayName.trim(), description, isDraft: true, enabled: true, triggers: [triggerOf(trigger)], automationSteps: [] } },
      }),
    );
    const id = saved.automation.id ?? "";
    handOver(id, { said: `Automation created: ${saved.automation.displayName}, a draft.`, ...(saved.webhookSecret ? { secret: saved.webhookSecret } : {}) });
    navigate("automations", id);
  });
  return (
    <section>
      <h1>New automation</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save.run();
        }}
      >
        <Field label="Name">
          <input required maxLength={200} value={displayName} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Description">
          <textarea rows={2} maxLength={2000} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <TriggerInputs draft={trigger} onChange={setTrigger} />
        <div class="actions">
          <button type="submit" disabled={save.busy}>
            Save
          </button>
          <a href={href("automations")}>Cancel</a>
        </div>
        <ErrorText error={save.error} />
      </form>
    </section>
  );
}
