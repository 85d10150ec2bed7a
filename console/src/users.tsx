// Users shown by their display name, with their id beside it. The contract has no batch read of
// users, so names come from UserService.List (its first page, read at sign-in, and its `query` as a
// user input is typed in) and UserService.Get for any other id, each asked once per sign-in. Only a
// super admin or a fund admin may read users: for every other role, and for an id no user has, the
// id is shown alone.
import { useEffect, useState } from "preact/hooks";
import { ApiRequestError, unwrap, type ApiClient, type components } from "../../src/client/index.js";

type User = components["schemas"]["User"];

export interface UserNames {
  /** Whether the caller may read users (only a super admin or a fund admin may). */
  readable: boolean;
  /** The user of `id`, or null when it cannot be read (no such user, or the role may not read users). */
  get(id: string): Promise<User | null>;
  /** The user of `id` when already read: a list drawn again shows names at once, not ids first. */
  known(id: string): User | undefined;
  /** Every user read so far (the first page, those found and those read by id), by name. */
  all(): User[];
  /** Asks the API for the users whose name or email contains `text` (or whose id it is); they join all(). */
  search(text: string): Promise<void>;
}

/** How many users sign-in reads at once (the contract's largest page): a small tenant's every name. */
const FIRST_PAGE = 100;

/** The names for a session: none when the caller's role may not read users (UserService.List is 403). */
export async function userNames(client: ApiClient): Promise<UserNames> {
  const read = new Map<string, User>();
  // Each id asked once: its answer, or the request under way.
  const cache = new Map<string, Promise<User | null>>();
  const { data, response } = await client.GET("/api/v1/users", { params: { query: { page_size: FIRST_PAGE } } });
  if (response.status === 403) return { readable: false, get: () => Promise.resolve(null), known: () => undefined, all: () => [], search: () => Promise.resolve() };
  if (!data) throw new ApiRequestError(response, undefined);
  const remember = (users: readonly { user: User }[]) => {
    for (const { user } of users) {
      read.set(user.id, user);
      cache.set(user.id, Promise.resolve(user));
    }
  };
  remember(data.list);
  const fetchUser = async (id: string) => {
    try {
      const { user } = unwrap(await client.GET("/api/v1/users/{user_id}", { params: { path: { user_id: id } } }));
      read.set(id, user);
      return user;
    } catch (e) {
      // An id that is no user's (a row opened by hand, a user since removed) stays unnamed; a
      // passing failure (the network, a 5xx) is asked again the next time the id is shown.
      if (!(e instanceof ApiRequestError && (e.status === 404 || e.status === 400))) cache.delete(id);
      return null;
    }
  };
  return {
    readable: true,
    get(id) {
      let user = cache.get(id);
      if (!user) cache.set(id, (user = fetchUser(id)));
      return user;
    },
    known: (id) => read.get(id),
    all: () => [...read.values()].sort((a, b) => a.displayName.localeCompare(b.displayName)),
    async search(text) {
      // One page is enough: a user input shows a few suggestions, and typing more narrows them. A
      // failed search (the network, a 5xx) leaves the suggestions to the users already read.
      const found = await client.GET("/api/v1/users", { params: { query: { query: text, page_size: SUGGESTED } } }).catch(() => undefined);
      if (found?.data) remember(found.data.list);
    },
  };
}

function useUser(names: UserNames, id: string): User | null {
  const [user, setUser] = useState<User | null>(() => names.known(id) ?? null);
  useEffect(() => {
    let live = true;
    setUser(names.known(id) ?? null);
    if (id) void names.get(id).then((u) => live && setUser(u));
    return () => {
      live = false;
    };
  }, [names, id]);
  return user;
}

/** A user: the display name with the id after it in small type (and as the title), or the id alone. */
export function UserName({ names, id }: { names: UserNames; id: string }) {
  const user = useUser(names, id);
  if (!user) return <code data-testid="user-id">{id}</code>;
  return (
    <span class="user" title={id}>
      <span data-testid="user-name">{user.displayName}</span> <code class="user-id">{id}</code>
    </span>
  );
}

/** The display name, or the id, as text (a heading, a sentence). */
export function useUserLabel(names: UserNames, id: string): string {
  return useUser(names, id)?.displayName ?? id;
}

/** A real user for example bodies: a subject with a fund first, else any user read; "" when none may be read. */
export function exampleUserId(names: UserNames): string {
  const users = names.all();
  return (users.find((u) => u.roles.includes("ROLE_USER")) ?? users[0])?.id ?? "";
}

/** How many users a user input suggests at once. */
const SUGGESTED = 8;

/** How long typing pauses before a user input asks the API, so a word typed asks once, not per key. */
const SEARCH_DELAY_MS = 200;

/** The longest text UserService.List's `query` takes. */
const QUERY_MAX = 100;

/** The users whose name, email or id contains `text` (any case); none for an id typed in full. */
export function suggestUsers(users: User[], text: string): User[] {
  const wanted = text.trim().toLowerCase();
  if (!wanted || users.some((u) => u.id === text.trim())) return [];
  return users.filter((u) => [u.displayName, u.email, u.id].some((v) => v.toLowerCase().includes(wanted))).slice(0, SUGGESTED);
}

let inputs = 0;

/**
 * A user id input that suggests users by name (the users read so far, see UserNames): typing a
 * name, an email or part of an id lists the users that match; choosing one (click, or arrows and
 * Enter) puts in its id, since the API takes ids only. `multiple`: ids separated by commas, the
 * last one typed is the one suggested. A role that may not read users gets a plain input.
 */
export function UserInput(props: { label: string; names: UserNames; value: string; onChange: (value: string) => void; multiple?: boolean; required?: boolean }) {
  const { names, value, onChange, multiple = false } = props;
  const [id] = useState(() => `user-suggestions-${++inputs}`);
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const parts = multiple ? value.split(",") : [value];
  const typed = parts[parts.length - 1] ?? "";
  // Bumped when a search's answer adds users, to suggest them too.
  const [, setFound] = useState(0);
  const wanted = open ? typed.trim() : "";
  useEffect(() => {
    if (!names.readable || !wanted || wanted.length > QUERY_MAX) return;
    // Only the answer for the text now typed redraws: a slower answer to older text is not shown.
    let live = true;
    const timer = setTimeout(() => void names.search(wanted).then(() => live && setFound((n) => n + 1)), SEARCH_DELAY_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [names, wanted]);
  const suggestions = open ? suggestUsers(names.all(), typed) : [];
  const choose = (user: User) => {
    onChange(multiple ? [...parts.slice(0, -1).map((p) => p.trim()), user.id].join(", ") : user.id);
    setOpen(false);
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (suggestions.length === 0) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      setActive((a) => (a + (e.key === "ArrowDown" ? 1 : suggestions.length - 1)) % suggestions.length);
    } else if (e.key === "Enter") {
      // Enter chooses the suggestion; it submits the form once none is shown.
      e.preventDefault();
      choose(suggestions[Math.min(active, suggestions.length - 1)]!);
    } else if (e.key === "Escape") {
      setOpen(false);
    }
  };
  // Labelled like a Field, but by `for`: a label around the list would put the suggestions in the input's name.
  return (
    <div class="field">
      <label class="label" for={`${id}-input`}>
        {props.label}
      </label>
      <span class="combo">
        <input
          id={`${id}-input`}
          role="combobox"
          aria-autocomplete="list"
          aria-expanded={suggestions.length > 0}
          aria-controls={id}
          aria-activedescendant={suggestions.length > 0 ? `${id}-${Math.min(active, suggestions.length - 1)}` : undefined}
          autoComplete="off"
          required={props.required}
          value={value}
          placeholder={multiple ? "user names or ids" : "user name or id"}
          onInput={(e) => {
            onChange(e.currentTarget.value);
            setActive(0);
            setOpen(true);
          }}
          onKeyDown={onKeyDown}
          onBlur={() => setOpen(false)}
        />
        {suggestions.length > 0 ? (
          <ul id={id} role="listbox" aria-label="Users">
            {suggestions.map((u, i) => (
              <li
                id={`${id}-${i}`}
                role="option"
                aria-selected={i === Math.min(active, suggestions.length - 1)}
                // Chosen before the input's blur would close the list.
                onMouseDown={(e) => {
                  e.preventDefault();
                  choose(u);
                }}
              >
                {u.displayName} <span class="hint">{u.email}</span>
              </li>
            ))}
          </ul>
        ) : null}
      </span>
    </div>
  );
}
