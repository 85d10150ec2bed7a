// App caps (the middle layer, for every subject of an app) and the fund policy (its currency, the
// time zone of spend windows and the tenant default, the last layer).
import { useEffect, useState } from "preact/hooks";
import { call, type Schemas, type Session } from "../api.js";
import { draftCaps, emptyLimitDraft, ErrorText, Field, LimitInputs, ListStatus, Outcome, useAction, usePaged, When, type LimitDraft } from "../components.js";
import { formatLimitPer, spendLimit } from "../money.js";
import { ControlsView } from "./effective.js";

/** Controls holding a base limit (and its period for an amount) with its caps, as caps and the policy set them here. */
function limitControls(draft: LimitDraft, currencyCode: string) {
  return { limit: spendLimit(draft.arm, draft.amount, currencyCode), ...(draft.arm === "amount" ? { period: draft.period } : {}), ...draftCaps(draft, currencyCode) };
}

function AppCaps({ session }: { session: Session }) {
  const { client, currencyCode } = session;
  const { items, loaded, error, pager, reload } = usePaged((page_token) => call(client.GET("/api/v1/funds/app-caps", { params: { query: { page_size: 25, page_token } } })));
  const [appId, setAppId] = useState("");
  const [draft, setDraft] = useState<LimitDraft>(emptyLimitDraft);
  const set = useAction(async () => {
    const { appCap } = await call(client.POST("/api/v1/funds/app-caps/{app_id}", { params: { path: { app_id: appId.trim() } }, body: { controls: limitControls(draft, currencyCode) } }));
    reload();
    return `Cap set on ${appCap.appId}: ${formatLimitPer(appCap.controls?.limit, appCap.controls?.period)}.`;
  });
  const remove = useAction(async (id: string) => {
    await call(client.DELETE("/api/v1/funds/app-caps/{app_id}", { params: { path: { app_id: id } } }));
    reload();
    return `Cap on ${id} removed.`;
  });
  return (
    <section aria-label="App caps">
      <h2>App caps</h2>
      <ListStatus error={error} loaded={loaded} count={items.length} empty="No app caps." />
      <ul class="cards">
        {items.map(({ appCap }) => (
          <li key={appCap.appId}>
            <h3>{appCap.appId}</h3>
            <ControlsView controls={appCap.controls} />
            <p class="hint">
              Updated <When at={appCap.updatedAt} />
            </p>
            <button type="button" class="danger" disabled={remove.busy} onClick={() => void remove.run(appCap.appId)}>
              Remove cap
            </button>
          </li>
        ))}
      </ul>
      <Outcome action={remove} />
      {pager}
      <h3>Set a cap</h3>
      <Field label="App id">
        <input value={appId} placeholder="e.g. app-github" onInput={(e) => setAppId(e.currentTarget.value)} />
      </Field>
      <LimitInputs draft={draft} onChange={setDraft} arms={["amount", "blocked", "unlimited"]} withPeriod withCaps currencyCode={currencyCode} />
      <button type="button" disabled={set.busy} onClick={() => void set.run()}>
        Set cap
      </button>
      <Outcome action={set} />
    </section>
  );
}

function Policy({ session }: { session: Session }) {
  const { client } = session;
  const [policy, setPolicy] = useState<Schemas["FundPolicy"] | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [draft, setDraft] = useState<LimitDraft>(emptyLimitDraft);
  const [timeZone, setTimeZone] = useState("");
  useEffect(() => {
    call(client.GET("/api/v1/funds/policy")).then((r) => setPolicy(r.fundPolicy), setLoadError);
  }, []);
  const update = useAction(async (defaultControls: ReturnType<typeof limitControls> | null) => {
    const r = await call(client.POST("/api/v1/funds/policy", { body: { fundPolicy: { currencyCode: policy?.currencyCode ?? session.currencyCode, defaultControls }, updateMask: "defaultControls" } }));
    setPolicy(r.fundPolicy);
    return r.fundPolicy.defaultControls ? `Tenant default set: ${formatLimitPer(r.fundPolicy.defaultControls.limit, r.fundPolicy.defaultControls.period)}.` : "Tenant default cleared.";
  });
  const updateZone = useAction(async () => {
    const fundPolicy = { currencyCode: policy?.currencyCode ?? session.currencyCode, defaultControls: null, timeZone: timeZone.trim() };
    const r = await call(client.POST("/api/v1/funds/policy", { body: { fundPolicy, updateMask: "timeZone" } }));
    setPolicy(r.fundPolicy);
    return `Time zone set: ${r.fundPolicy.timeZone}.`;
  });
  return (
    <section aria-label="Fund policy">
      <h2>Fund policy</h2>
      <ErrorText error={loadError} />
      {policy ? (
        <>
          <p>
            Currency <strong>{policy.currencyCode}</strong>. Time zone <strong data-testid="policy-time-zone">{policy.timeZone}</strong> (spend windows follow its calendar).
            Tenant default (when neither the row nor the app cap decides):
          </p>
          <ControlsView controls={policy.defaultControls} />
        </>
      ) : null}
      <LimitInputs draft={draft} onChange={setDraft} arms={["amount", "blocked", "unlimited"]} withPeriod withCaps currencyCode={session.currencyCode} />
      <div class="actions">
        <button type="button" disabled={update.busy} onClick={() => void update.run(limitControls(draft, session.currencyCode))}>
          Set default
        </button>
        <button type="button" disabled={update.busy || !policy?.defaultControls} onClick={() => void update.run(null)}>
          Clear default
        </button>
      </div>
      <Outcome action={update} />
      <Field label="Time zone">
        <input value={timeZone} placeholder="e.g. Europe/Paris" onInput={(e) => setTimeZone(e.currentTarget.value)} />
      </Field>
      <button type="button" disabled={updateZone.busy} onClick={() => void updateZone.run()}>
        Set time zone
      </button>
      <Outcome action={updateZone} />
    </section>
  );
}

export function CapsAndPolicy({ session }: { session: Session }) {
  return (
    <section>
      <h1>App caps and fund policy</h1>
      <Policy session={session} />
      <AppCaps session={session} />
    </section>
  );
}
