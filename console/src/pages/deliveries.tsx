// The delivery log of an automation, newest first: each accepted event with its type (where the
// sender's scheme names one: GitHub's `push`, Stripe's `invoice.paid`), its outcome and, when it
// ran, its execution with each step's state, output and error (a parked one with its next attempt,
// a notify step with its attempts so far); for an automation on fund events,
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

/** One attempt of a `notify` step, as its output records it (`output.attempts`). */
interface Attempt {
  attempt: number | null;
  startedAt: string | null;
  status: number | null;
  error: string | null;
  responseExcerpt: string | null;
}

const asText = (v: unknown): string | null => (typeof v === "string" && v ? v : null);
const asNumber = (v: unknown): number | null => (typeof v === "number" ? v : null);

/** The attempts of a `notify` step's output, read defensively: any other output has none. */
export function attemptsOf(output: unknown): Attempt[] | null {
  if (!output || typeof output !== "object" || !("attempts" in output)) return null;
  const attempts: unknown = (output as { attempts: unknown }).attempts;
  if (!Array.isArray(attempts)) return null;
  return attempts.map((a: unknown) => {
    const r = (a && typeof a === "object" ? a : {}) as Record<string, unknown>;
    return { attempt: asNumber(r.attempt), startedAt: asText(r.startedAt), status: asNumber(r.status), error: asText(r.error), responseExcerpt: asText(r.responseExcerpt) };
  });
}

function Attempts({ attempts }: { attempts: Attempt[] }) {
  if (attempts.length === 0) return <p class="hint">No attempt made yet.</p>;
  return (
    <ol class="attempts" aria-label="Attempts">
      {attempts.map((a, i) => (
        <li data-testid="attempt">
          Attempt {a.attempt ?? i + 1} · <When at={a.startedAt} /> · <span data-testid="attempt-status">{a.status === null ? "no answer" : `HTTP ${a.status}`}</span>
          {a.error ? (
            <>
              {" "}
              · <span class="error" data-testid="attempt-error">{a.error}</span>
            </>
          ) : null}
          {a.responseExcerpt ? (
            <>
              {" "}
              · <code>{a.responseExcerpt}</code>
            </>
          ) : null}
        </li>
      ))}
    </ol>
  );
}

export function ExecutionView({ execution }: { execution: Execution }) {
  // A state this console does not know yet (the enumeration may gain values) is shown by its name.
  const state = short(execution.state ?? "", "AUTOMATION_EXECUTION_STATE_") || "unknown";
  const parked = execution.state === "AUTOMATION_EXECUTION_STATE_PARKED";
  return (
    <div class="execution" data-testid="execution">
      <p>
        Execution <code>{execution.id}</code>: <strong class={`state ${state}`} data-testid="execution-state">{state}</strong>
        {execution.completedAt ? (
          <>
            {" "}
            at <When at={execution.completedAt} />
          </>
        ) : null}
        {parked || execution.nextAttemptAt ? (
          <>
            {" "}
            · next attempt <span data-testid="next-attempt"><When at={execution.nextAttemptAt} /></span>
          </>
        ) : null}
        {execution.redriveOf ? <> · redrive of <code>{execution.redriveOf}</code></> : null}
        {execution.redrivenBy ? <> · redriven by <code>{execution.redrivenBy}</code></> : null}
      </p>
      {parked ? <p class="hint">Parked: a notification failed and is tried again at the next attempt (or its destination is paused); it holds no worker meanwhile.</p> : null}
      <ol class="results">
        {execution.stepResults.map((r) => {
          const attempts = attemptsOf(r.output);
          const stepState = short(r.state ?? "", "STEP_STATE_") || "unknown";
          return (
            <li data-testid="step-result">
              <span class="step-name">{r.stepName}</span> <span class={`state ${stepState}`}>{stepState}</span>
              {r.error ? <p class="error">{r.error}</p> : null}
              {attempts ? <Attempts attempts={attempts} /> : null}
              {r.output !== null && r.output !== undefined ? <Json value={r.output} /> : null}
            </li>
          );
        })}
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
              <When at={event.receivedAt} /> · event <code>{event.eventId}</code>
              {event.eventType ? <> · <span data-testid="webhook-event-type">{event.eventType}</span></> : null} ·{" "}
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
