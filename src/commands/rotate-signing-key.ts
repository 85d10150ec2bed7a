// `npm run rotate-signing-key`: makes a new access-token signing key, which every instance signs
// with within two minutes, while the key before verifies until the tokens it signed have expired
// (docs/operating.md "Token signing keys"). It reads DATABASE_URL and SECRETS_KEY (or SECRETS_KEY_FILE), and
// prints the new key's kid, never key material. Exit 2 on a configuration, database or key it must
// not run with (as the server refuses them), 1 on any other failure.
import { configOrExit, exitRefused, loadKeyCommandConfig } from "../config.js";
import { runCommand } from "./run-command.js";
import { systemClock } from "../core/clock.js";
import { rotateSigningKey } from "../identity/signing-keys.js";
import { checkSealedSecrets } from "../sealed-secrets.js";
import { openStorage } from "../storage/connect.js";
import { loadSecretsKey } from "../storage/secrets-key.js";
import { SecretBox } from "../webhooks/secret-box.js";

async function rotate(): Promise<void> {
  const config = configOrExit(loadKeyCommandConfig);
  // Migrations are the servers' or `npm run migrate`'s: a database that lacks one is refused.
  const storage = await openStorage(config.database, { migrate: false }).catch(exitRefused);
  let rotated;
  try {
    const box = new SecretBox(loadSecretsKey(config.secretsKey));
    // A key that does not open what the database holds sealed would seal a signing key that no instance opens.
    await checkSealedSecrets(storage, box, config.secretsKey);
    rotated = await rotateSigningKey(storage, box, systemClock);
  } catch (e) {
    await storage.close();
    exitRefused(e);
  }
  await storage.close();
  process.stdout.write(
    rotated.made
      ? `new signing key ${rotated.kid}: every instance signs with it within two minutes\n`
      : `signing key ${rotated.kid} was made by a rotation run at the same time: every instance signs with it within two minutes\n`,
  );
}

runCommand("signing key rotation failed", rotate);
