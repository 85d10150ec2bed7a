// Every kind of value the database holds sealed with SECRETS_KEY, one sample of each, for the key's
// check (./storage/secrets-key.ts) by the server at start and by the key command before it seals.
import { sealedNotificationSecretSample } from "./automations/notification-secrets.js";
import { sealedNotificationKeySample } from "./automations/notification-signing-keys.js";
import type { Config } from "./config.js";
import { sealedAnswerSample } from "./http/idempotency.js";
import { sealedSigningKeySample } from "./identity/signing-keys.js";
import type { Storage } from "./storage/connect.js";
import { checkSecretsKey, type Box } from "./storage/secrets-key.js";
import { sealedSecretSample } from "./webhooks/listeners.js";

export function checkSealedSecrets(storage: Storage, box: Box, source: Config["secretsKey"]): Promise<void> {
  return checkSecretsKey(storage, box, source, {
    "webhook secrets": () => sealedSecretSample(storage),
    "kept answers": () => sealedAnswerSample(storage),
    "signing keys": () => sealedSigningKeySample(storage),
    "notification secrets": () => sealedNotificationSecretSample(storage),
    "notification keys": () => sealedNotificationKeySample(storage),
  });
}
