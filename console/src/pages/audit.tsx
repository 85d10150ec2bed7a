// The audit trail: who changed what, when, and what it was before and after. The audit page lists
// every event the caller may read, filtered; a limit row's page shows that row's history beside it.
import { call, type Schemas, type Session } from "../api.js";
import { Field, Json, ListStatus, Table, usePaged, useSearch, When } from "../components.js";
import { AuditTargetKindValues } from "../../../generated/enums.js";
import { formatLimitPer } from "../money.js";
import { UserInput, UserName, type UserNames } from "../users.js";
import { operationWords } from "../words.js";

type AuditEvent = Schemas["AuditEvent"];

interface Filters {
  target_kind?: string;
  target_id?: string;
  user_id?: string;
  app_id?: string;
  actor_user_id?: string;
}

const words = (value: string, prefix: string) => value.replace(prefix, "").toLowerCase().replace(/_/g, " ");
type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The leaves that differ between `before` and `after`, as `path: old → new`: what a reader wants of a change. */
function differences(before: unknown, after: unknown, path = ""): string[] {
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    return keys.flatMap((k) => differences(before[k], after[k], path ? `${path}.${k}` : k));
  }
  const was = JSON.stringify(before ?? null);
  const now = JSON.stringify(after ?? null);
  return was === now ? [] : [`${path}: ${was} → ${now}`];
}

/** The controls of a target that has them: a limit row's or an app cap's, the policy's default; else undefined. */
function controlsOf(target: unknown): Schemas["SpendControls"] | null | undefined {
  if (!isObject(target)) return undefined;
  const controls = "controls" in target ? target.controls : "defaultControls" in target ? target.defaultControls : undefined;
  if (controls === undefined) return undefined;
  return isObject(controls) ? (controls as Schemas["SpendControls"]) : null;
}

/**
 * A change of a limit or an extension said in words ("Limit: USD 250 a month → USD 300 a month"),
 * for the targets that carry controls; the other changes read from the differences.
 */
function limitChanges(before: unknown, after: unknown): string[] {
  const was = controlsOf(before);
  const now = controlsOf(after);
  if (was === undefined && now === undefined) return [];
  const said = (label: string, of: (c: Schemas["SpendControls"] | null | undefined) => string) => {
    const [from, to] = [of(was), of(now)];
    return from === to ? [] : [`${label}: ${from} → ${to}`];
  };
  return [
    ...said("Limit", (c) => formatLimitPer(c?.limit, c?.period)),
    // An extension keeps the row's period.
    ...said("Extension", (c) => (c?.extension ? formatLimitPer(c.extension.limit, c.period) : "none")),
  ];
}

function Actor({ actor, names }: { actor: AuditEvent["actor"]; names: UserNames }) {
  if (actor.kind === "AUDIT_ACTOR_KIND_AUTOMATION_EXECUTION") {
    return (
      <span>
        automation <code>{actor.automationId}</code>, execution <code>{actor.executionId}</code>
      </span>
    );
  }
  return (
    <span>
      <UserName names={names} id={actor.userId} /> (credential <code>{actor.credentialId}</code>)
    </span>
  );
}

/** What was changed: its kind, then its user by name (and its app) where it has them, else its id. */
function Target({ target, names }: { target: AuditEvent["target"]; names: UserNames }) {
  const kind = words(target.kind, "AUDIT_TARGET_KIND_");
  if (!target.userId) return <span>{kind} <code>{target.id}</code></span>;
  return (
    <span title={target.id}>
      {kind} <UserName names={names} id={target.userId} />
      {target.appId ? <> · {target.appId}</> : null}
    </span>
  );
}

function Events({ session, filters, withTarget }: { session: Session; filters: Filters; withTarget: boolean }) {
  const query = Object.fromEntries(Object.entries(filters).filter(([, v]) => v)) as Filters;
  const { items, loaded, error, pager } = usePaged((page_token) =>
    call(session.client.GET("/api/v1/audit-events", { params: { query: { ...query, page_size: 25, page_token } as never } })),
  );
  return (
    <>
      <ListStatus error={error} loaded={loaded} count={items.length} empty="No change recorded." />
      <Table headers={["When", "Operation", ...(withTarget ? ["Target"] : []), "By", "Change"]}>
        {items.map(({ auditEvent: e }) => (
          <tr key={e.id} data-testid="audit-event">
            <td>
              <When at={e.createdAt} />
            </td>
            <td title={e.operationId} data-testid="audit-operation">
              {operationWords(e.operationId)}
            </td>
            {withTarget ? (
              <td>
                <Target target={e.target} names={session.names} />
              </td>
            ) : null}
            <td>
              <Actor actor={e.actor} names={session.names} />
            </td>
            <td class="change">
              {limitChanges(e.before, e.after).map((line) => (
                <p class="limit-change" data-testid="limit-change">
                  {line}
                </p>
              ))}
              <details>
                <summary>{e.before === null ? "created" : e.after === null ? "removed" : "changed"}</summary>
                {e.before !== null && e.after !== null ? (
                  <ul class="differences">
                    {differences(e.before, e.after).map((line) => (
                      <li>
                        <code>{line}</code>
                      </li>
                    ))}
                  </ul>
                ) : (
                  <Json value={e.before ?? e.after} />
                )}
              </details>
            </td>
          </tr>
        ))}
      </Table>
      {pager}
    </>
  );
}

/** A limit row's history, newest first; remounted (key) by its page after each change made there. */
export function LimitHistory({ session, userId, appId }: { session: Session; userId: string; appId: string }) {
  return (
    <section aria-label="History">
      <h2>History</h2>
      <Events session={session} filters={{ target_kind: "AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT", user_id: userId, app_id: appId }} withTarget={false} />
    </section>
  );
}

export function AuditPage({ session }: { session: Session }) {
  const { form, setForm, filters, generation, submit } = useSearch<Filters>({});
  const user = (name: "user_id" | "actor_user_id", label: string) => (
    <UserInput label={label} names={session.names} value={form[name] ?? ""} onChange={(id) => setForm({ ...form, [name]: id })} />
  );
  return (
    <section>
      <h1>Audit trail</h1>
      <p class="hint">Every change to limits, caps, the fund policy, users, credentials and automations, newest first. Spends are in their own ledger.</p>
      <form class="row" role="search" onSubmit={submit}>
        <Field label="Target">
          <select value={form.target_kind ?? ""} onChange={(e) => setForm({ ...form, target_kind: e.currentTarget.value })}>
            <option value="">any</option>
            {AuditTargetKindValues.filter((k) => k !== "AUDIT_TARGET_KIND_UNSPECIFIED").map((k) => (
              <option value={k}>{words(k, "AUDIT_TARGET_KIND_")}</option>
            ))}
          </select>
        </Field>
        {user("user_id", "User id")}
        <Field label="App id">
          <input value={form.app_id ?? ""} placeholder="e.g. app-salesforce" onInput={(e) => setForm({ ...form, app_id: e.currentTarget.value.trim() })} />
        </Field>
        {user("actor_user_id", "Changed by (user id)")}
        <button type="submit">Filter</button>
      </form>
      <Events key={generation} session={session} filters={filters} withTarget />
    </section>
  );
}
