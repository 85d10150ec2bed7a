// The console's shell: sign-in, then navigation to the views the caller's role may use.
import { useState } from "preact/hooks";
import { signIn, type Session } from "./api.js";
import { ErrorText, Field, useAction } from "./components.js";
import { AuditPage } from "./pages/audit.js";
import { AutomationPage } from "./pages/automation.js";
import { AutomationList, NewAutomation } from "./pages/automations.js";
import { CapsAndPolicy } from "./pages/caps.js";
import { DestinationsPage } from "./pages/destinations.js";
import { LimitRow, LimitSearch, OpenRow } from "./pages/limits.js";
import { MyLimits } from "./pages/my-limits.js";
import { SpendsPage } from "./pages/spends.js";
import { UsersPage } from "./pages/users.js";
import { href, useRoute } from "./route.js";

function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [clientId, setClientId] = useState("");
  const [clientSecret, setClientSecret] = useState("");
  const action = useAction(async () => onSignedIn(await signIn(clientId.trim(), clientSecret)));
  return (
    <main class="signin">
      <h1>Tenant console</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void action.run();
        }}
      >
        <Field label="Client id">
          <input name="client_id" autoComplete="username" required value={clientId} onInput={(e) => setClientId(e.currentTarget.value)} />
        </Field>
        <Field label="Client secret">
          <input name="client_secret" type="password" autoComplete="current-password" required value={clientSecret} onInput={(e) => setClientSecret(e.currentTarget.value)} />
        </Field>
        <button type="submit" class="primary" disabled={action.busy}>
          Sign in
        </button>
        <ErrorText error={action.error} />
        <p class="hint">Your API client credentials. The access token is kept in this page's memory only: reloading or closing it signs you out.</p>
      </form>
    </main>
  );
}

function View({ session, route }: { session: Session; route: string[] }) {
  const [area, a, b] = route;
  const { can } = session;
  if (area === "automations" && can.automations) {
    if (a === "new") return <NewAutomation session={session} />;
    if (a) return <AutomationPage key={a} session={session} id={a} />;
    return <AutomationList session={session} />;
  }
  if (area === "limits" && can.subjectLimits) {
    if (a === "open" && !b) return <OpenRow session={session} />;
    if (a && b) return <LimitRow key={`${a}/${b}`} session={session} userId={a} appId={b} />;
    // `#/limits/<user id>`: that user's rows (the Users page links there).
    return <LimitSearch key={a ?? ""} session={session} userId={a} />;
  }
  if (area === "spends" && can.subjectLimits) return <SpendsPage session={session} canAct />;
  if (area === "caps" && can.subjectLimits) return <CapsAndPolicy session={session} />;
  if (area === "my" && can.myLimits) return <MyLimits session={session} />;
  if (area === "audit" && can.audit) return <AuditPage session={session} />;
  if (area === "users" && can.users) return <UsersPage session={session} />;
  if (area === "destinations" && can.destinations) return <DestinationsPage session={session} />;
  // The first view the role may use.
  if (can.automations) return <AutomationList session={session} />;
  if (can.subjectLimits) return <LimitSearch session={session} />;
  if (can.myLimits) return <MyLimits session={session} />;
  return <NothingHere />;
}

/** For a credential whose role has no page here: an app's backend (ROLE_APP_SERVICE) calls the API itself. */
function NothingHere() {
  return (
    <section>
      <h1>Nothing to manage here</h1>
      <p>This credential's role has no page in the console. An app's backend (ROLE_APP_SERVICE) calls the API directly, for the apps its credential is bound to.</p>
    </section>
  );
}

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const route = useRoute();
  if (!session) return <SignIn onSignedIn={setSession} />;
  const links: [string, string, boolean][] = [
    ["automations", "Automations", session.can.automations],
    ["destinations", "Notification destinations", session.can.destinations],
    ["limits", "Fund limits", session.can.subjectLimits],
    ["spends", "Spends", session.can.subjectLimits],
    ["caps", "Caps and policy", session.can.subjectLimits],
    ["users", "Users", session.can.users],
    ["my", "My limits", session.can.myLimits],
    ["audit", "Audit trail", session.can.audit],
  ];
  return (
    <>
      <header class="top">
        <nav aria-label="Main">
          {links
            .filter(([, , shown]) => shown)
            .map(([to, label]) => (
              <a href={href(to)} aria-current={route[0] === to ? "page" : undefined}>
                {label}
              </a>
            ))}
        </nav>
        <span class="who">
          {session.clientId}{" "}
          <button type="button" onClick={() => setSession(null)}>
            Sign out
          </button>
        </span>
      </header>
      <main>
        <View session={session} route={route} />
      </main>
    </>
  );
}
