// The delivery log of an automation, newest first: each accepted event with its outcome and, when it
// ran, its execution with each step's state, output and error; for an automation on fund events,
// which receives no webhook, its executions, each with the fund event that started it. Both reload
// while the page is open.
import { call, type Schemas, type Session } from "../api.js";
import { ErrorText, Json, usePaged, When } from "../components.js";
import { UserName } from "../users.js";
import { eventTypeLabel } from "./fund-trigger.js";

const REFRESH_MS = 2_000;
const PAGE_SIZE = 10;

type Execution = Schemas["AutomationExecution"];

const short = (value: string, prefix: string) => value.replace(prefix, "").toLowerCase().replace(/_/g, " ");

/** A page of events with the executions they started (one list call, then any missing by id). */
async function deliveries(session: Session, automationId: string, page_token: string) {
  const { client } = session;
  const events = await call(client.GET("/api/v1/automations/{id}/webhook-events", { params: { path: { id: automationId }, query: { page_size: PAGE_SIZE, page_token } } }));
  const executions = new Map<string, Execution>();
  const wanted = events.list.map((e) => e.webhookEvent.automationExecutionId).filter((id): id is string => !!id);
  if (wanted.length > 0) {
    const recent = await call(client.GET("/api/v1/automation_executions", { params: { query: { automation_id: automationId, page_size: PAGE_SIZE } } }));
    for (const { automationExecution } of recent.list) executions.set(automationExecution.id, automationExecution);
    for (const id of wanted.filter((id) => !executions.has(id))) {
      executions.set(id, (await call(client.GET("/api/v1/automation_executions/{id}", { params: { path: { id } } }))).automationExecution);
    }
  }
  return { list: events.list.map(({ webhookEvent }) => ({ event: webhookEvent, execution: executions.get(webhookEvent.automationExecutionId ?? "") })), nextPageToken: events.nextPageToken };
}

function ExecutionView({ execution }: { execution: Execution }) {
  return (
    <div class="execution" data-testid="execution">
      <p>
        Execution <code>{execution.id}</code>: <strong data-testid="execution-state">{short(execution.state, "AUTOMATION_EXECUTION_STATE_")}</strong>
        {execution.completedAt ? (
          <>
            {" "}
            at <When at={execution.completedAt} />
          </>
        ) : null}
      </p>
      <ol class="results">
        {execution.stepResults.map((r) => (
          <li data-testid="step-result">
            <span class="step-name">{r.stepName}</span> <span class={`state ${short(r.state, "STEP_STATE_")}`}>{short(r.state, "STEP_STATE_")}</span>
            {r.error ? <p class="error">{r.error}</p> : null}
            {r.output !== null && r.output !== undefined ? <Json value={r.output} /> : null}
          </li>
        ))}
      </ol>
    </div>
  );
}

export function DeliveryLog({ session, automationId }: { session: Session; automationId: string }) {
  const { items, loaded, error, pager } = usePaged((token) => deliveries(session, automationId, token), REFRESH_MS);
  return (
    <section aria-label="Delivery log">
      <h2>Delivery log</h2>
      <p class="hint">Accepted events of the last 7 days, newest first; refreshed every {REFRESH_MS / 1000} s.</p>
      <ErrorText error={error} />
      {loaded && items.length === 0 ? <p>No event received yet.</p> : null}
      <ul class="deliveries">
        {items.map(({ event, execution }) => (
          <li key={event.eventId} data-testid="delivery">
            <p>
              <When at={event.receivedAt} /> · event <code>{event.eventId}</code> ·{" "}
              <strong data-testid="outcome">{short(event.outcome, "WEBHOOK_EVENT_OUTCOME_")}</strong>
              {event.notRunReason ? ` (${event.notRunReason})` : ""}
            </p>
            {execution ? <ExecutionView execution={execution} /> : null}
          </li>
        ))}
      </ul>
      {pager}
    </section>
  );
}

/** A string field of the fund event (`type`, `userId`, `appId`), from the execution's `ctx.trigger`. */
function eventField(execution: Execution, field: string): string | null {
  const trigger: unknown = execution.context.trigger;
  if (!trigger || typeof trigger !== "object" || !(field in trigger)) return null;
  const value: unknown = (trigger as Record<string, unknown>)[field];
  return typeof value === "string" && value ? value : null;
}

export function ExecutionLog({ session, automationId }: { session: Session; automationId: string }) {
  const { items, loaded, error, pager } = usePaged(
    (page_token) => call(session.client.GET("/api/v1/automation_executions", { params: { query: { automation_id: automationId, page_size: PAGE_SIZE, page_token } } })),
    REFRESH_MS,
  );
  return (
    <section aria-label="Executions">
      <h2>Executions</h2>
      <p class="hint">Each fund event the trigger matched, newest first; refreshed every {REFRESH_MS / 1000} s.</p>
      <ErrorText error={error} />
      {loaded && items.length === 0 ? <p>No execution yet.</p> : null}
      <ul class="deliveries">
        {items.map(({ automationExecution: execution }) => {
          const type = eventField(execution, "type");
          const userId = eventField(execution, "userId");
          const appId = eventField(execution, "appId");
          return (
            <li key={execution.id} data-testid="fund-execution">
              <p>
                <When at={execution.createdAt} /> · event <code>{execution.eventId ?? "—"}</code>
                {type ? <> · <strong data-testid="event-type">{eventTypeLabel(type)}</strong></> : null}
                {userId ? (
                  <>
                    {" "}
                    · <UserName names={session.names} id={userId} />
                    {appId ? ` · ${appId}` : ""}
                  </>
                ) : null}
              </p>
              <ExecutionView execution={execution} />
            </li>
          );
        })}
      </ul>
      {pager}
    </section>
  );
}
