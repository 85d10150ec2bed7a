// The identity room's services as a server runs them: users, credentials, signing keys, access
// tokens and the token endpoint's grant, with the super admin made on a new database.
import type { Config } from "../config.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import type { PageTokens } from "../core/pagination.js";
import type { ChangeWatch } from "../storage/change-versions.js";
import type { Storage } from "../storage/connect.js";
import type { Box } from "../storage/secrets-key.js";
import { AccessTokens } from "./access-tokens.js";
import { bootstrapAdmin } from "./bootstrap.js";
import { ClientCredentialsGrant } from "./client-credentials-grant.js";
import { Credentials } from "./credentials.js";
import { FailureThrottle } from "./failure-throttle.js";
import { SigningKeys } from "./signing-keys.js";
import { Users } from "./users.js";

export interface IdentityWiring {
  storage: Storage;
  clock: Clock;
  logger: Logger;
  pageTokens: PageTokens;
  /** Seals the signing keys' private halves. */
  box: Box;
  config: Pick<Config, "accessTokenTtlSeconds" | "signingKeyRotationDays" | "baseUrl" | "bootstrap">;
  /** Revocations and role changes, made by any instance, reaching this one's cached principals. */
  principals: ChangeWatch;
}

export async function identityServices({ storage, clock, logger, pageTokens, box, config, principals }: IdentityWiring) {
  const users = new Users(storage, clock, pageTokens);
  const credentials = new Credentials(storage, clock, users, pageTokens, principals);
  const signingKeys = await SigningKeys.load(storage, box, clock, { tokenTtlSeconds: config.accessTokenTtlSeconds, rotationDays: config.signingKeyRotationDays });
  const accessTokens = new AccessTokens(storage, signingKeys, clock, { issuer: config.baseUrl, ttlSeconds: config.accessTokenTtlSeconds }, principals);
  const grant = new ClientCredentialsGrant(credentials, accessTokens, new FailureThrottle(storage, clock));
  await bootstrapAdmin(storage, users, credentials, config.bootstrap, logger);
  return { users, credentials, signingKeys, accessTokens, grant };
}
