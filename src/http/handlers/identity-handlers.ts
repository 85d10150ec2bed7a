// Handlers of TokenService, UserService and CredentialService: translate, delegate, wrap.
import type { ServiceHandlers } from "../../../generated/server.js";
import type { ClientCredentialsGrant } from "../../identity/client-credentials-grant.js";
import type { Credentials } from "../../identity/credentials.js";
import type { Users } from "../../identity/users.js";
import { clientAddress } from "../../core/ip-address.js";
import { keepAnswer, type RequestContext } from "../context.js";

type IdentityHandlers = Pick<ServiceHandlers<RequestContext>, "TokenService" | "UserService" | "CredentialService">;

export function identityHandlers(deps: { grant: ClientCredentialsGrant; users: Users; credentials: Credentials; trustProxy: readonly string[] }): IdentityHandlers {
  const { grant, users, credentials, trustProxy } = deps;
  return {
    TokenService: {
      CreateToken: async ({ body }, ctx) => {
        const answer = await grant.exchange(body, clientAddress(ctx.peer.remoteAddress, ctx.peer.forwardedFor, trustProxy) ?? "", ctx);
        // A token issued: the client's credentials were right.
        ctx.callerAuthenticated?.();
        return answer;
      },
    },
    UserService: {
      Create: async ({ body }, ctx) => ({ user: await users.create(body, keepAnswer(ctx, (user) => ({ user })), ctx) }),
      Get: async ({ path }) => ({ user: await users.get(path.user_id) }),
      List: async ({ query }) => {
        const page = await users.list(query.page_size, query.page_token, query.query);
        return { list: page.items.map((user) => ({ user })), nextPageToken: page.nextPageToken };
      },
    },
    CredentialService: {
      Create: async ({ path, body }, ctx) =>
        credentials.create(path.user_id, { displayName: body.displayName ?? "", appIds: body.appIds }, { beforeCommit: keepAnswer(ctx, (created) => created), origin: ctx }),
      List: async ({ path, query }) => {
        const page = await credentials.list(path.user_id, query.page_size, query.page_token);
        return { list: page.items.map((credential) => ({ credential })), nextPageToken: page.nextPageToken };
      },
      Revoke: async ({ path }, ctx) => ({ credential: await credentials.revoke(path.user_id, path.credential_id, ctx) }),
    },
  };
}
