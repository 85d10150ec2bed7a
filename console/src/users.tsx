// Users shown by their display name, with their id beside it. The contract has no batch read of
// users, so names come from UserService.List (its first page, read at sign-in) and UserService.Get
// for any other id, each asked once per sign-in. Only a super admin may read users: for every other
// role, and for an id no user has, the id is shown alone.
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
  /** Every user read so far (the first page, and those read by id), by name. */
  all(): User[];
}

/** How many users sign-in reads at once (the contract's largest page): a small tenant's every name. */
const FIRST_PAGE = 100;

/** The names for a session: none when the caller's role may not read users (UserService.List is 403). */
export async function userNames(client: ApiClient): Promise<UserNames> {
  const read = new Map<string, User>();
  // Each id asked once: its answer, or the request under way.
  const cache = new Map<string, Promise<User | null>>();
  const { data, response } = await client.GET("/api/v1/users", { params: { query: { page_size: FIRST_PAGE } } });
  if (response.status === 403) return { readable: false, get: () => Promise.resolve(null), known: () => undefined, all: () => [] };
  if (!data) throw new ApiRequestError(response, undefined);
  for (const { user } of data.list) {
    read.set(user.id, user);
    cache.set(user.id, Promise.resolve(user));
  }
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

/** The id of the datalist that user id inputs name in `list`. */
export const USER_CHOICES = "user-choices";

/**
 * The users read so far as choices of a user id input (`list={USER_CHOICES}`): typing a name
 * offers its id, since the API filters by id only. Nothing when the role may not read users.
 */
export function UserChoices({ names }: { names: UserNames }) {
  const users = names.all();
  if (users.length === 0) return null;
  return (
    <datalist id={USER_CHOICES}>
      {users.map((u) => (
        <option value={u.id} label={`${u.displayName} (${u.email})`} />
      ))}
    </datalist>
  );
}
