// Fund administrators: search subject-app rows by user and app, then one row's controls, its
// effective limit with the window's usage, its spend authorizations (release, reverse), with
// suspend/unsuspend (with a reason), the extension, and the base limit.
import { useEffect, useState } from "preact/hooks";
import { call, type Schemas, type Session } from "../api.js";
import { draftCaps, emptyLimitDraft, ErrorText, Field, LimitInputs, ListStatus, Outcome, Table, useAction, usePaged, useSearch, When, type LimitDraft } from "../components.js";
import { formatDecimal, formatLimit, formatLimitPer, spendLimit } from "../money.js";
import { href } from "../route.js";
import { ControlsView, EffectiveView } from "./effective.js";
import { LimitHistory } from "./audit.js";
import { Authorizations } from "./spends.js";
import { UserInput, UserName, useUserLabel } from "../users.js";

const ids = (text: string) => text.split(/[\s,]+/).filter(Boolean);

interface Filters {
  users: string;
  apps: string;
  suspended: "" | "true" | "false";
}

function Results({ session, filters }: { session: Session; filters: Filters }) {
  const { items, loaded, error, pager } = usePaged((pageToken) =>
    call(
      session.client.POST("/api/v1/funds/subject-app-limits/search", {
        body: { userIds: ids(filters.users), appIds: ids(filters.apps), ...(filters.suspended ? { suspended: filters.suspended === "true" } : {}), pageSize: 25, pageToken },
      }),
    ),
  );
  return (
    <>
      <ListStatus error={error} loaded={loaded} count={items.length} empty="No row matches." />
      <Table headers={["User", "App", "Limit", "Extension", "Suspended", "Updated"]}>
      {items.map(({ limit: row }) => (
        <tr key={`${row.userId}/${row.appId}`}>
          <td>
            <a href={href("limits", row.userId, row.appId)}>
              <UserName names={session.names} id={row.userId} />
            </a>
          </td>
          <td>{row.appId}</td>
          <td>{formatLimitPer(row.controls?.limit, row.controls?.period)}</td>
          <td>{row.controls?.extension ? formatLimitPer(row.controls.extension.limit, row.controls.period) : "—"}</td>
          <td>{row.controls?.suspension ? "yes" : "no"}</td>
          <td>
            <When at={row.updatedAt} />
          </td>
        </tr>
      ))}
      </Table>
      {pager}
    </>
  );
}

/** The rows of every user, or of `userId` when given. */
export function LimitSearch({ session, userId = "" }: { session: Session; userId?: string | undefined }) {
  const { form, setForm, filters, generation, submit } = useSearch<Filters>({ users: userId, apps: "", suspended: "" });
  return (
    <section>
      <h1>Fund limits</h1>
      <form class="row" role="search" onSubmit={submit}>
        <UserInput label="User ids" names={session.names} multiple value={form.users} onChange={(users) => setForm({ ...form, users })} />
        <Field label="App ids">
          <input value={form.apps} placeholder="e.g. app-salesforce" onInput={(e) => setForm({ ...form, apps: e.currentTarget.value })} />
        </Field>
        <Field label="Suspended">
          <select value={form.suspended} onChange={(e) => setForm({ ...form, suspended: e.currentTarget.value as Filters["suspended"] })}>
            <option value="">any</option>
            <option value="true">suspended</option>
            <option value="false">not suspended</option>
          </select>
        </Field>
        <button type="submit">Search</button>
      </form>
      <Results key={generation} session={session} filters={filters} />
      <p>
        <a href={href("limits", "open")}>Open a row by user and app…</a>
      </p>
    </section>
  );
}

/** Opens a row by its ids, also one that does not exist yet (setting its limit creates it). */
export function OpenRow({ session }: { session: Session }) {
  const [userId, setUser] = useState("");
  const [appId, setApp] = useState("");
  return (
    <section>
      <h1>Open a limit row</h1>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          window.location.hash = href("limits", userId.trim(), appId.trim());
        }}
      >
        <UserInput label="User id" names={session.names} required value={userId} onChange={setUser} />
        <Field label="App id">
          <input required value={appId} placeholder="e.g. app-salesforce" onInput={(e) => setApp(e.currentTarget.value)} />
        </Field>
        <button type="submit">Open</button>
      </form>
    </section>
  );
}

export function LimitRow({ session, userId, appId }: { session: Session; userId: string; appId: string }) {
  const [row, setRow] = useState<Schemas["SubjectAppLimit"] | null | undefined>(undefined);
  const [effective, setEffective] = useState<Schemas["EffectiveLimit"] | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [reason, setReason] = useState("");
  const [limit, setLimit] = useState<LimitDraft>(emptyLimitDraft);
  const [extension, setExtension] = useState<LimitDraft & { expiresAt: string; reason: string }>({ ...emptyLimitDraft, expiresAt: "", reason: "" });
  const path = { params: { path: { user_id: userId, app_id: appId } } };
  const { client, currencyCode } = session;
  const who = useUserLabel(session.names, userId);

  // Both read before either is shown: the row and its effective limit never disagree on the page.
  const load = async () => {
    const [got, resolved] = await Promise.all([
      client.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}", path),
      call(client.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/effective", path)),
    ]);
    const loaded = got.response.status === 404 ? null : (await call(Promise.resolve(got))).limit;
    setRow(loaded);
    setEffective(resolved.effective);
    // SetLimit replaces the row's caps with its limit: the inputs start from the stored ones, so setting a limit keeps them unless changed.
    const cap = loaded?.controls?.perAuthorization;
    const count = loaded?.controls?.maxAuthorizations;
    setLimit((d) => ({ ...d, perAuthorization: cap ? formatDecimal(cap) : "", maxAuthorizations: count ? String(count) : "" }));
  };
  useEffect(() => {
    load().then(() => setLoadError(null), setLoadError);
  }, [userId, appId]);

  // Counts the changes made here: the history is read anew after each.
  const [changes, setChanges] = useState(0);
  // Each change says what it did, in the words of the row's page, from the row as the server answers it.
  const act = <A extends unknown[]>(change: (...args: A) => Promise<string>) =>
    useAction(async (...args: A) => {
      const said = await change(...args);
      setChanges((n) => n + 1);
      await load();
      return `${said}.`;
    });
  const on = `${who} on ${appId}`;
  const suspended = !!row?.controls?.suspension;
  const suspension = act(async () => {
    if (suspended) {
      await call(client.DELETE("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension", path));
      return `Unsuspended ${on}`;
    }
    await call(client.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension", { ...path, body: reason.trim() ? { reason: reason.trim() } : {} }));
    return `Suspended ${on}`;
  });
  const setBase = act(async () => {
    const body = { limit: spendLimit(limit.arm, limit.amount, currencyCode), ...(limit.arm === "amount" ? { period: limit.period } : {}), ...draftCaps(limit, currencyCode) };
    const { controls } = (await call(client.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { ...path, body }))).limit;
    return `Limit set for ${on}: ${formatLimitPer(controls?.limit, controls?.period)}`;
  });
  const changeExtension = act(async (clear: boolean) => {
    if (clear) {
      await call(client.DELETE("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/extension", path));
      return `Extension cleared for ${on}`;
    }
    const expires = new Date(extension.expiresAt);
    if (Number.isNaN(expires.getTime())) throw new Error("Choose when the extension expires.");
    const body = { limit: spendLimit(extension.arm, extension.amount, currencyCode), expiresAt: expires.toISOString(), ...(extension.reason.trim() ? { reason: extension.reason.trim() } : {}) };
    const { controls } = (await call(client.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/extension", { ...path, body }))).limit;
    return `Extension set for ${on}: ${formatLimit(controls?.extension?.limit)} until ${expires.toLocaleString()}`;
  });

  return (
    <article>
      <p>
        <a href={href("limits")}>← Fund limits</a>
      </p>
      <h1 title={userId}>
        {who} · {appId}
      </h1>
      {who !== userId ? (
        <p class="hint">
          User <code data-testid="row-user-id">{userId}</code>
        </p>
      ) : null}
      <ErrorText error={loadError} />
      {row === null ? <p>No row yet: the app cap and the tenant default decide. Setting a limit creates the row.</p> : <ControlsView controls={row?.controls} />}
      <EffectiveView effective={effective} />
      <Authorizations session={session} userId={userId} appId={appId} canAct onChange={() => void load().then(() => setLoadError(null), setLoadError)} />

      <section aria-label="Suspension">
        <h2>Suspension</h2>
        <div class="row">
          {suspended ? null : (
            <Field label="Reason">
              <input value={reason} maxLength={500} placeholder="e.g. Card reported lost" onInput={(e) => setReason(e.currentTarget.value)} />
            </Field>
          )}
          <button type="button" class={suspended ? "" : "danger"} disabled={suspension.busy} onClick={() => void suspension.run()}>
            {suspended ? "Unsuspend" : "Suspend"}
          </button>
        </div>
        <Outcome action={suspension} />
      </section>

      <section aria-label="Extension">
        <h2>Extension</h2>
        <LimitInputs draft={extension} onChange={(d) => setExtension({ ...extension, ...d })} arms={["amount", "unlimited"]} withPeriod={false} currencyCode={currencyCode} />
        <div class="row">
          <Field label="Expires at">
            <input type="datetime-local" value={extension.expiresAt} onInput={(e) => setExtension({ ...extension, expiresAt: e.currentTarget.value })} />
          </Field>
          <Field label="Reason (visible to the subject)">
            <input value={extension.reason} maxLength={500} onInput={(e) => setExtension({ ...extension, reason: e.currentTarget.value })} />
          </Field>
        </div>
        <div class="actions">
          <button type="button" disabled={changeExtension.busy} onClick={() => void changeExtension.run(false)}>
            Set extension
          </button>
          {row?.controls?.extension ? (
            <button type="button" disabled={changeExtension.busy} onClick={() => void changeExtension.run(true)}>
              Clear extension
            </button>
          ) : null}
        </div>
        <Outcome action={changeExtension} />
      </section>

      <section aria-label="Base limit">
        <h2>Base limit</h2>
        <LimitInputs draft={limit} onChange={setLimit} arms={["amount", "blocked", "unlimited"]} withPeriod withCaps currencyCode={currencyCode} />
        <button type="button" disabled={setBase.busy} onClick={() => void setBase.run()}>
          Set limit
        </button>
        <Outcome action={setBase} />
      </section>

      <LimitHistory key={changes} session={session} userId={userId} appId={appId} />
    </article>
  );
}
