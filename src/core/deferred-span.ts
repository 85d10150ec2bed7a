// A span whose parent is known only after its work began: a request's, which continues its caller's
// trace only once the caller authenticated (src/http/request-span.ts). A span's trace is fixed when it
// starts, so it starts late, dated from when its work began; until then what is done to it, and the
// children started under it (the authentication's transactions), are kept and replayed once it
// starts, or dropped if it starts unsampled. docs/operating.md, "Traces".
import type { AttributeValue, LogIds, Span, SpanKind } from "./spans.js";

/** A span waiting for the deferred span it descends from (or that one itself): it starts when that one does. */
class Pending implements Span {
  protected begun = false;
  private span: Span | undefined;
  private waiting: Array<(span: Span | undefined) => void> = [];

  /** `root`: the deferred span this one descends from; none for that one itself. */
  constructor(private readonly root?: Pending) {}

  /** Starts the deferred span: at once, its ids are needed. */
  start(): void {
    this.root?.start();
  }

  /** The span this one is (none: traces stopped, or its parent is unsampled); what was done meanwhile is done to it. */
  protected begin(span: Span | undefined): void {
    this.begun = true;
    this.span = span;
    for (const call of this.waiting) call(span);
    this.waiting = [];
  }

  private once(call: (span: Span | undefined) => void): void {
    if (this.begun) call(this.span);
    else this.waiting.push(call);
  }

  get recording(): boolean {
    return this.begun ? (this.span?.recording ?? false) : true;
  }

  get logIds(): LogIds | undefined {
    this.start();
    return this.span?.logIds;
  }

  traceparent(): string | undefined {
    this.start();
    return this.span?.traceparent();
  }

  child(name: string, attributes: Record<string, AttributeValue>, startTime = performance.now(), kind?: SpanKind): Span {
    if (this.span) return this.span.child(name, attributes, startTime, kind);
    const child = new Pending(this.root ?? this);
    this.once((span) => child.begin(span?.recording ? span.child(name, attributes, startTime, kind) : undefined));
    return child;
  }

  setAttribute(name: string, value: AttributeValue): void {
    this.once((span) => span?.setAttribute(name, value));
  }

  fail(message?: string): void {
    this.once((span) => span?.fail(message));
  }

  end(endTime = performance.now()): void {
    this.once((span) => span?.end(endTime));
  }
}

export class DeferredSpan extends Pending {
  private readonly startTime = performance.now();

  /** `open` starts the span, with the parent it has then, at the time given (its creation's). */
  constructor(private readonly open: (startTime: number) => Span | undefined) {
    super();
  }

  /** Starts it now, if it has not started: from here on its parent is what `open` chooses now. */
  override start(): void {
    if (!this.begun) this.begin(this.open(this.startTime));
  }

  /** Its end starts it, if nothing did before: the span of its work is never left out. */
  override end(endTime = performance.now()): void {
    this.start();
    super.end(endTime);
  }
}
