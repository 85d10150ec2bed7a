// The tenant's users (super and fund admins, who may read them), 20 a page as UserService.List
// answers them: name, email, roles and id, each linking to the user's limit rows.
import { call, type Session } from "../api.js";
import { ListStatus, Table, usePaged } from "../components.js";
import { href } from "../route.js";

/** "ROLE_FUND_ADMIN" as "fund admin". */
const roleWords = (role: string) => role.replace(/^ROLE_/, "").toLowerCase().replace(/_/g, " ");

export function UsersPage({ session }: { session: Session }) {
  const { items, loaded, error, pager } = usePaged((page_token) => call(session.client.GET("/api/v1/users", { params: { query: { page_size: 20, page_token } } })));
  return (
    <section>
      <h1>Users</h1>
      <p class="hint">Every user of the tenant, in the order of their ids. A name opens that user's limit rows.</p>
      <ListStatus error={error} loaded={loaded} count={items.length} empty="No users." />
      <Table headers={["Name", "Email", "Roles", "Id"]}>
        {items.map(({ user }) => (
          <tr key={user.id} data-testid="user">
            <td>
              <a href={href("limits", user.id)}>{user.displayName}</a>
            </td>
            <td>{user.email}</td>
            <td>{user.roles.map(roleWords).join(", ")}</td>
            <td>
              <code>{user.id}</code>
            </td>
          </tr>
        ))}
      </Table>
      {pager}
    </section>
  );
}
