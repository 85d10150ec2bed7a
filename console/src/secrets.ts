// A webhook secret is shown once, on the page that follows the save that issued it. It passes from
// the form to that page here, in memory, and is gone once taken.
const revealed = new Map<string, string>();

export function revealSecret(automationId: string, secret: string): void {
  revealed.set(automationId, secret);
}

export function takeSecret(automationId: string): string | undefined {
  const secret = revealed.get(automationId);
  revealed.delete(automationId);
  return secret;
}
