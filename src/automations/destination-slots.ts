// Requests in flight per notification destination (host and port) from this process, capped: a
// receiver that answers slowly or never holds that many of the worker's runs at most; an execution
// over the cap parks instead of waiting (runner.ts). Per process, so the cap needs no database.

export class DestinationSlots {
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly cap: number) {}

  /** A slot for a request to `destination`, freed by the function answered; undefined while it has `cap` in flight. */
  take(destination: string): (() => void) | undefined {
    const held = this.inFlight.get(destination) ?? 0;
    if (held >= this.cap) return undefined;
    this.inFlight.set(destination, held + 1);
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      const left = (this.inFlight.get(destination) ?? 1) - 1;
      if (left === 0) this.inFlight.delete(destination);
      else this.inFlight.set(destination, left);
    };
  }
}

/** A URL's destination as the cap counts it: its host and port. */
export const destinationOf = (url: URL): string => `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;
