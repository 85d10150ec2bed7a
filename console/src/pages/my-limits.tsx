// The caller's own limits (every role, a ROLE_USER sees only these): each row with its effective
// limit and the current window's usage, and setting or clearing the caller's limit for an app
// (amounts only, as the API accepts).
import { useState } from "preact/hooks";
import { call, type Schemas, type Session } from "../api.js";
import { emptyLimitDraft, ErrorText, Field, LimitInputs, ListStatus, Outcome, useAction, usePaged, type LimitDraft } from "../components.js";
import { formatLimitPer, spendLimit } from "../money.js";
import { ControlsView, EffectiveView } from "./effective.js";

export function MyLimits({ session }: { session: Session }) {
  const { client, currencyCode } = session;
  const { items, loaded, error, pager, reload } = usePaged((page_token) => call(client.GET("/api/v1/funds/my/app-limits", { params: { query: { page_size: 25, page_token } } })));
  const [effective, setEffective] = useState<{ appId: string; value: Schemas["EffectiveLimit"] } | null>(null);
  const [appId, setAppId] = useState("");
  const [draft, setDraft] = useState<LimitDraft>(emptyLimitDraft);
  const path = (app_id: string) => ({ params: { path: { app_id } } });

  const show = useAction(async (id: string) => {
    setEffective({ appId: id, value: (await call(client.GET("/api/v1/funds/my/app-limits/{app_id}/effective", path(id)))).effective });
  });
  const set = useAction(async () => {
    const id = appId.trim();
    const { limit } = await call(client.POST("/api/v1/funds/my/app-limits/{app_id}/limit", { ...path(id), body: { limit: spendLimit("amount", draft.amount, currencyCode), period: draft.period } }));
    reload();
    await show.run(id);
    return `Your limit on ${id} is set: ${formatLimitPer(limit.controls?.limit, limit.controls?.period)}.`;
  });
  const clear = useAction(async (id: string) => {
    await call(client.DELETE("/api/v1/funds/my/app-limits/{app_id}/limit", path(id)));
    reload();
    setEffective(null);
    return `Your limit on ${id} is cleared.`;
  });

  return (
    <section>
      <h1>My limits</h1>
      <ListStatus error={error} loaded={loaded} count={items.length} empty="You have no limits of your own yet." />
      <ul class="cards">
        {items.map(({ limit }) => (
          <li key={limit.appId}>
            <h3>{limit.appId}</h3>
            <ControlsView controls={limit.controls} />
            <div class="actions">
              <button type="button" onClick={() => void show.run(limit.appId)}>
                Effective limit
              </button>
              <button type="button" onClick={() => void clear.run(limit.appId)}>
                Clear my limit
              </button>
            </div>
            {effective?.appId === limit.appId ? <EffectiveView effective={effective.value} /> : null}
          </li>
        ))}
      </ul>
      <ErrorText error={show.error} />
      <Outcome action={clear} />
      {pager}
      <h2>Set my limit for an app</h2>
      <Field label="App id">
        <input value={appId} placeholder="e.g. app-github" onInput={(e) => setAppId(e.currentTarget.value)} />
      </Field>
      <LimitInputs draft={draft} onChange={setDraft} arms={["amount"]} withPeriod currencyCode={currencyCode} />
      <button type="button" disabled={set.busy} onClick={() => void set.run()}>
        Set my limit
      </button>
      <Outcome action={set} />
    </section>
  );
}
