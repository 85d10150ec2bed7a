// A generated credential handed to the operator in a file of its own, never on the log stream
// (where log shipping would collect it): created exclusively (never over another file), readable
// by this user alone (mode 0600), and on the disk before the caller puts the credential in the
// database. Its format is a shell's: `. ./data/bootstrap-credential.env` sets CLIENT_ID and
// CLIENT_SECRET, the names the README's quickstart and the guides use (docker's --env-file reads
// it too); a generated id and secret need no quoting.
import { mkdir, open, unlink } from "node:fs/promises";
import { dirname } from "node:path";

export async function writeCredentialFile(path: string, credential: { clientId: string; clientSecret: string }, what: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const file = await open(path, "wx", 0o600);
  try {
    await file.writeFile(`# ${what}. Keep it in your secret store, then delete this file.\nCLIENT_ID=${credential.clientId}\nCLIENT_SECRET=${credential.clientSecret}\n`);
    await file.sync();
  } catch (e) {
    // Ours, and incomplete: no file is better than one that holds half a credential.
    await file.close();
    await unlink(path);
    throw e;
  }
  await file.close();
}
