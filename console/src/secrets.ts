// What the page that follows a new automation's save shows once: the webhook secret it issued and
// what was done. It passes from the form to that page here, in memory, and is gone once taken.
export interface Handover {
  said: string;
  secret?: string;
}

const handed = new Map<string, Handover>();

export function handOver(automationId: string, handover: Handover): void {
  handed.set(automationId, handover);
}

export function takeHandover(automationId: string): Handover | undefined {
  const handover = handed.get(automationId);
  handed.delete(automationId);
  return handover;
}
