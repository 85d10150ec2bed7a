// Notification destinations (super admins): each host and port that notify steps post to and that
// failed at least once, with its health (state, failures in a row, since when, the circuit's end,
// when disabled, the last error), paged; Disable and Enable (which also clears a failing one's
// failures and circuit), each after a confirmation, with the destination as the server answers it.
import { useState } from "preact/hooks";
import { call, type Schemas, type Session } from "../api.js";
import { ConfirmPanel, ListStatus, newKey, Table, useAction, usePaged, When } from "../components.js";

type Destination = Schemas["NotificationDestination"];

/** "circuit open" for NOTIFICATION_DESTINATION_STATE_CIRCUIT_OPEN; a state this console does not know by its name. */
export function destinationStateLabel(state: string | undefined): string {
  return (state ?? "").replace("NOTIFICATION_DESTINATION_STATE_", "").toLowerCase().replace(/_/g, " ") || "unknown";
}

interface Pending {
  action: "enable" | "disable";
  destination: Destination;
  /** The Idempotency-Key of this request: a second click or a retry of it does it once. */
  key: string;
}

function Confirm({ session, pending, onDone, onCancel }: { session: Session; pending: Pending; onDone: (d: Destination) => void; onCancel: () => void }) {
  const { action, destination: d, key } = pending;
  const act = useAction(async () => {
    const params = { path: { destination_id: d.id }, header: { "Idempotency-Key": key } };
    const answer =
      action === "disable"
        ? await call(session.client.POST("/api/v1/notification-destinations/{destination_id}/disable", { params, body: {} }))
        : await call(session.client.POST("/api/v1/notification-destinations/{destination_id}/enable", { params, body: {} }));
    onDone(answer.notificationDestination);
  });
  const title = action === "disable" ? `Disable ${d.destination}?` : `Enable ${d.destination}?`;
  return (
    <ConfirmPanel title={title} confirm={action === "disable" ? "Disable" : "Enable"} danger={action === "disable"} busy={act.busy} error={act.error} onConfirm={() => void act.run()} onCancel={onCancel}>
      {action === "disable" ? (
        <p>No attempt is made to it any more: each notification to it fails its step at once (parked ones when they come due), until it is enabled again.</p>
      ) : d.state === "NOTIFICATION_DESTINATION_STATE_DISABLED" ? (
        <p>
          Its failures and circuit are cleared: the next notification to it is attempted at once. Executions that failed while it was disabled stay failed: redrive them from their automation.
        </p>
      ) : (
        <p>Its failures and circuit are cleared without waiting for the cool-down: for a destination known to be up again. The next notification to it is attempted at once.</p>
      )}
    </ConfirmPanel>
  );
}

export function DestinationsPage({ session }: { session: Session }) {
  const { items, loaded, error, pager, reload } = usePaged((page_token) => call(session.client.GET("/api/v1/notification-destinations", { params: { query: { page_size: 25, page_token } } })));
  const [pending, setPending] = useState<Pending | null>(null);
  const [done, setDone] = useState<Destination | null>(null);
  const ask = (action: Pending["action"], destination: Destination) => {
    setDone(null);
    setPending({ action, destination, key: newKey() });
  };
  return (
    <section>
      <header class="bar">
        <h1>Notification destinations</h1>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </header>
      <p class="hint">
        The hosts and ports that notify steps post to and that failed at least once, with their health. A destination whose circuit is open gets no attempt until the time shown (its executions stay
        parked); a disabled one fails each notification at once until it is enabled.
      </p>
      {pending ? (
        <Confirm
          session={session}
          pending={pending}
          onCancel={() => setPending(null)}
          onDone={(d) => {
            setPending(null);
            setDone(d);
            reload();
          }}
        />
      ) : null}
      {done ? (
        <p role="status" data-testid="destination-result">
          {done.destination} is now {destinationStateLabel(done.state)}.
        </p>
      ) : null}
      <ListStatus error={error} loaded={loaded} count={items.length} empty="No destination has failed yet." />
      {items.length > 0 ? (
        <Table headers={["Destination", "State", "Action", "Failures in a row", "Failing since", "Circuit open until", "Disabled at", "Last error", "Updated", "Id"]}>
          {items.map(({ notificationDestination: d }) => {
            const state = destinationStateLabel(d.state);
            const disabled = d.state === "NOTIFICATION_DESTINATION_STATE_DISABLED";
            const healthy = d.state === "NOTIFICATION_DESTINATION_STATE_HEALTHY";
            return (
              <tr key={d.id} data-testid="destination">
                <td>
                  <code>{d.destination}</code>
                </td>
                <td>
                  <span class={`state ${state}`} data-testid="destination-state">
                    {state}
                  </span>
                </td>
                <td>
                  <div class="actions">
                    {disabled ? null : (
                      <button type="button" aria-label={`Disable ${d.destination}`} onClick={() => ask("disable", d)}>
                        Disable
                      </button>
                    )}
                    {healthy ? null : (
                      <button type="button" aria-label={`Enable ${d.destination}`} onClick={() => ask("enable", d)}>
                        Enable
                      </button>
                    )}
                  </div>
                </td>
                <td data-testid="destination-failures">{d.consecutiveFailures}</td>
                <td>
                  <When at={d.failingSince} />
                </td>
                <td>
                  <When at={d.circuitOpenUntil} />
                </td>
                <td>
                  <When at={d.disabledAt} />
                </td>
                <td data-testid="destination-error">{d.lastError ?? "—"}</td>
                <td>
                  <When at={d.updatedAt} />
                </td>
                <td>
                  <code>{d.id}</code>
                </td>
              </tr>
            );
          })}
        </Table>
      ) : null}
      {pager}
    </section>
  );
}
