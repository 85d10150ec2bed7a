// What the page that follows a save shows once: the webhook secret a new automation was issued and
// what was done (a deletion's, on the list). It passes to that page here, in memory, and is gone once taken.
export interface Handover {
  said: string;
  secret?: string;
}

const handed = new Map<string, Handover>();

/** The key of the automation list's handover (an automation's own is its id). */
export const AUTOMATION_LIST = "";

export function handOver(page: string, handover: Handover): void {
  handed.set(page, handover);
}

export function takeHandover(page: string): Handover | undefined {
  const handover = handed.get(page);
  handed.delete(page);
  return handover;
}
