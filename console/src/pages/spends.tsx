// Spends: the current window's usage (spent, held, remaining) as a bar with its figures; the
// authorizations of one subject and app, newest first; and the page of every authorization,
// filtered by what SpendService.List filters on. From either list a fund administrator releases a
// pending hold or reverses a captured spend, each after a confirmation.
import { useState } from "preact/hooks";
import { SpendAuthorizationStateValues } from "../../../generated/enums.js";
import { call, type Schemas, type Session } from "../api.js";
import { ConfirmPanel, Field, ListStatus, newKey, Table, useAction, usePaged, useSearch, When } from "../components.js";
import { formatDecimal, formatMoney, fromNanos, parseAmount, percentOf, toNanos } from "../money.js";
import { href } from "../route.js";
import { UserInput, UserName } from "../users.js";

type Authorization = Schemas["SpendAuthorization"];

/** What SpendService.List filters on; an empty one does not filter. */
interface Query {
  userId: string;
  appId: string;
  state: string;
  /** RFC 3339, the `windowStart` of the authorizations wanted. */
  windowStart: string;
}

const words = (value: string, prefix: string) => value.replace(prefix, "").toLowerCase().replace(/_/g, " ");
const stateWords = (state: string) => words(state, "SPEND_AUTHORIZATION_STATE_");

/**
 * The window's accounting: a bar (spent, then held, out of the limit) and the exact figures, with
 * the authorizations it counts and has left when a count is in force.
 */
export function UsageView({ usage }: { usage: Schemas["SpendUsage"] | null | undefined }) {
  if (!usage) return null;
  const { spent, held, limit, remaining, maxAuthorizations, authorizationsRemaining } = usage;
  let bar = null;
  if (limit) {
    const whole = toNanos(limit);
    const spentNanos = toNanos(spent);
    // Held beyond what the limit leaves after spent cannot be drawn (a limit lowered mid-window).
    const room = whole > spentNanos ? whole - spentNanos : 0n;
    const heldNanos = toNanos(held) < room ? toNanos(held) : room;
    const label = `Spent ${formatMoney(spent)}, held ${formatMoney(held)}, remaining ${formatMoney(remaining)} of ${formatMoney(limit)}`;
    bar = (
      <div class="usage-bar" role="img" aria-label={label} data-testid="usage-bar">
        <span class="spent" data-testid="usage-bar-spent" style={{ width: percentOf(spentNanos, whole) }} />
        <span class="held" data-testid="usage-bar-held" style={{ width: percentOf(heldNanos, whole) }} />
      </div>
    );
  }
  return (
    <section class="usage" aria-label="Usage">
      <h4>
        This window: <When at={usage.windowStart} /> to <When at={usage.windowEnd} />
      </h4>
      {bar}
      <dl class="figures">
        <div>
          <dt>
            <span class="swatch spent" /> Spent
          </dt>
          <dd data-testid="usage-spent">{formatMoney(spent)}</dd>
        </div>
        <div>
          <dt>
            <span class="swatch held" /> Held
          </dt>
          <dd data-testid="usage-held">{formatMoney(held)}</dd>
        </div>
        <div>
          <dt>
            <span class="swatch remaining" /> Remaining
          </dt>
          <dd data-testid="usage-remaining">{remaining ? formatMoney(remaining) : "no amount limit"}</dd>
        </div>
        <div>
          <dt>Limit</dt>
          <dd data-testid="usage-limit">{limit ? formatMoney(limit) : "—"}</dd>
        </div>
        {typeof maxAuthorizations === "number" ? (
          <>
            <div>
              <dt>Authorizations</dt>
              <dd data-testid="usage-authorizations">
                {`${usage.authorizations} of ${maxAuthorizations}`}
              </dd>
            </div>
            <div>
              <dt>Authorizations left</dt>
              <dd data-testid="usage-authorizations-remaining">{authorizationsRemaining}</dd>
            </div>
          </>
        ) : null}
      </dl>
    </section>
  );
}

const reversible = (a: Authorization) => toNanos(a.capturedAmount) - toNanos(a.reversedAmount);

interface Pending {
  kind: "release" | "reverse";
  authorization: Authorization;
  /**
   * The Idempotency-Key of this request: a second click or a retry of it does it once. A changed
   * amount is another request, so it gets a new key (the server keeps a refusal's answer for its key).
   */
  key: string;
  amount: string;
}

/** The confirmation of a release or a reversal, next to the list; nothing is sent before it. */
function Confirm({ session, pending, onAmount, onDone, onCancel }: { session: Session; pending: Pending; onAmount: (text: string) => void; onDone: (said: string) => void; onCancel: () => void }) {
  const { client } = session;
  const { authorization: a, kind, key } = pending;
  const path = { params: { path: { authorization_id: a.id }, header: { "Idempotency-Key": key } } };
  const act = useAction(async () => {
    if (kind === "release") {
      await call(client.POST("/api/v1/funds/spend-authorizations/{authorization_id}/release", { ...path, body: {} }));
      onDone(`Released the hold of ${formatMoney(a.amount)} (${a.id}).`);
    } else {
      const amount = parseAmount(pending.amount, a.amount.currencyCode);
      await call(client.POST("/api/v1/funds/spend-authorizations/{authorization_id}/reverse", { ...path, body: { amount } }));
      onDone(`Reversed ${formatMoney(amount)} of ${a.id}.`);
    }
  });
  const title = kind === "release" ? "Release this hold?" : "Reverse this spend?";
  return (
    <ConfirmPanel title={title} confirm={kind === "release" ? "Release the hold" : "Reverse"} danger busy={act.busy} error={act.error} onConfirm={() => void act.run()} onCancel={onCancel}>
      {kind === "release" ? (
        <p>
          The hold of <strong>{formatMoney(a.amount)}</strong> ({a.id}) stops counting now and can no longer be captured.
        </p>
      ) : (
        <>
          <p>
            Of <strong>{formatMoney(a.capturedAmount)}</strong> captured ({a.id}), {formatMoney(fromNanos(reversible(a), a.amount.currencyCode))} may still be reversed. The amount reversed is
            given back to the window the spend counted in.
          </p>
          <Field label={`Amount to reverse (${a.amount.currencyCode})`}>
            <input inputMode="decimal" class="short" value={pending.amount} onInput={(e) => onAmount(e.currentTarget.value)} />
          </Field>
        </>
      )}
    </ConfirmPanel>
  );
}

/**
 * One filtered list of authorizations, paged. `withSubject` adds the user and app columns (the
 * page of all authorizations; a row's own list has them in its heading) and the window start,
 * which `onWindow` turns into a filter.
 */
function Page(props: { session: Session; query: Query; pageSize: number; withSubject: boolean; canAct: boolean; onChange: () => void; onWindow?: (windowStart: string) => void }) {
  const { session, query, pageSize, withSubject, canAct, onChange, onWindow } = props;
  const { client } = session;
  const { userId, appId, state, windowStart } = query;
  const filters = { ...(userId ? { user_id: userId } : {}), ...(appId ? { app_id: appId } : {}), ...(state ? { state } : {}), ...(windowStart ? { window_start: windowStart } : {}) };
  const { items, loaded, error, pager, reload } = usePaged((page_token) => call(client.GET("/api/v1/funds/spend-authorizations", { params: { query: { ...filters, page_size: pageSize, page_token } } })));
  const [pending, setPending] = useState<Pending | null>(null);
  const [done, setDone] = useState("");
  const ask = (kind: Pending["kind"], authorization: Authorization) => {
    setDone("");
    setPending({ kind, authorization, key: newKey(), amount: formatDecimal(fromNanos(reversible(authorization), authorization.amount.currencyCode)) });
  };
  // What a reader scans for first (whose, amount, state, what may be done) comes first, on a phone at the top of its card.
  const headers = [...(withSubject ? ["User"] : []), "Amount", "State", ...(canAct ? ["Action"] : []), ...(withSubject ? ["App"] : []), "Created", "Captured", "Reversed", "Hold expires", ...(withSubject ? ["Window start"] : []), "Id"];
  return (
    <>
      <ListStatus error={error} loaded={loaded} count={items.length} empty="No authorization." />
      {items.length > 0 ? (
        <div class="spends">
          <Table headers={headers}>
            {items.map(({ authorization: a }) => (
              <tr key={a.id} data-testid="authorization">
                {withSubject ? (
                  <td data-testid="authorization-user">
                    <a href={href("limits", a.userId, a.appId)}>
                      <UserName names={session.names} id={a.userId} />
                    </a>
                  </td>
                ) : null}
                <td data-testid="authorization-amount">{formatMoney(a.amount)}</td>
                <td>
                  <span data-testid="authorization-state" class={`state ${stateWords(a.state)}`}>
                    {stateWords(a.state)}
                  </span>
                  {a.decision.approved ? null : <span class="hint"> ({words(a.decision.cause, "SPEND_DECLINE_CAUSE_")})</span>}
                </td>
                {canAct ? (
                  <td>
                    {a.state === "SPEND_AUTHORIZATION_STATE_PENDING" ? (
                      <button type="button" onClick={() => ask("release", a)}>
                        Release
                      </button>
                    ) : null}
                    {a.state === "SPEND_AUTHORIZATION_STATE_CAPTURED" && reversible(a) > 0n ? (
                      <button type="button" onClick={() => ask("reverse", a)}>
                        Reverse
                      </button>
                    ) : null}
                  </td>
                ) : null}
                {withSubject ? <td>{a.appId}</td> : null}
                <td>
                  <When at={a.createdAt} />
                </td>
                <td>{formatMoney(a.capturedAmount)}</td>
                <td>{formatMoney(a.reversedAmount)}</td>
                <td>
                  <When at={a.expiresAt} />
                </td>
                {withSubject ? (
                  <td>
                    <button type="button" class="link" title={`Only the window of ${a.windowStart} to ${a.windowEnd}`} onClick={() => onWindow?.(a.windowStart)}>
                      <When at={a.windowStart} />
                    </button>
                  </td>
                ) : null}
                <td>
                  <code>{a.id}</code>
                </td>
              </tr>
            ))}
          </Table>
        </div>
      ) : null}
      {pager}
      {pending ? (
        <Confirm
          key={`${pending.kind}/${pending.authorization.id}`}
          session={session}
          pending={pending}
          onAmount={(amount) => setPending({ ...pending, amount, key: newKey() })}
          onCancel={() => setPending(null)}
          onDone={(said) => {
            setPending(null);
            setDone(said);
            reload();
            onChange();
          }}
        />
      ) : null}
      {done ? (
        <p class="ok" role="status">
          {done}
        </p>
      ) : null}
    </>
  );
}

/**
 * The authorizations of `userId` for `appId`, newest first, paged, filtered by state; `canAct`
 * offers release and reverse (fund administrators); `onChange` follows a release or a reversal.
 */
export function Authorizations(props: { session: Session; userId: string; appId: string; canAct: boolean; onChange?: () => void }) {
  const [state, setState] = useState("");
  const query = { userId: props.userId, appId: props.appId, state, windowStart: "" };
  return (
    <section aria-label="Authorizations">
      <h3>Authorizations</h3>
      <div class="row">
        <StateSelect value={state} onChange={setState} />
      </div>
      <Page key={state} session={props.session} query={query} pageSize={10} withSubject={false} canAct={props.canAct} onChange={props.onChange ?? (() => undefined)} />
    </section>
  );
}

function StateSelect({ value, onChange }: { value: string; onChange: (state: string) => void }) {
  return (
    <Field label="State">
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">any</option>
        {SpendAuthorizationStateValues.filter((s) => s !== "SPEND_AUTHORIZATION_STATE_UNSPECIFIED").map((s) => (
          <option value={s}>{stateWords(s)}</option>
        ))}
      </select>
    </Field>
  );
}

/** Every spend authorization the caller may read, newest first, filtered, 25 a page. */
export function SpendsPage({ session, canAct }: { session: Session; canAct: boolean }) {
  const empty: Query = { userId: "", appId: "", state: "", windowStart: "" };
  const { form, setForm, filters, generation, submit, apply } = useSearch<Query>(empty);
  const input = (name: "appId" | "windowStart", label: string, placeholder: string) => (
    <Field label={label}>
      <input value={form[name]} placeholder={placeholder} onInput={(e) => setForm({ ...form, [name]: e.currentTarget.value.trim() })} />
    </Field>
  );
  return (
    <section aria-label="Spend authorizations">
      <h1>Spend authorizations</h1>
      <p class="hint">Every authorization, newest first. A window start keeps those decided in the spend window starting at that instant: choose a row's to see its window.</p>
      <form class="row" role="search" onSubmit={submit}>
        <UserInput label="User id" names={session.names} value={form.userId} onChange={(userId) => setForm({ ...form, userId })} />
        {input("appId", "App id", "e.g. app-salesforce")}
        <StateSelect value={form.state} onChange={(state) => setForm({ ...form, state })} />
        {/* The server checks the instant (400 INVALID_TIMESTAMP, said under the form). */}
        {input("windowStart", "Window start (RFC 3339)", "e.g. 2026-11-01T00:00:00Z")}
        <button type="submit">Filter</button>
      </form>
      <Page key={generation} session={session} query={filters} pageSize={25} withSubject canAct={canAct} onChange={() => undefined} onWindow={(windowStart) => apply({ ...filters, windowStart })} />
    </section>
  );
}
