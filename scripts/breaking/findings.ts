// A breaking change as the check reports it: a stable id, recorded in CHANGELOG.md to accept the
// change, and a sentence for people. The same id found through several operations is one finding.
export interface BreakingChange {
  /** `<kind>:<where>`, e.g. `response-property-removed:SubjectAppLimit.reason`. */
  id: string;
  message: string;
  /** Operation ids it was found through. */
  operations: string[];
}

export class Findings {
  private readonly byId = new Map<string, BreakingChange>();

  add(kind: string, where: string, message: string, operationId: string): void {
    const id = `${kind}:${where}`;
    const found = this.byId.get(id) ?? { id, message, operations: [] };
    if (!found.operations.includes(operationId)) found.operations.push(operationId);
    this.byId.set(id, found);
  }

  list(): BreakingChange[] {
    return [...this.byId.values()].sort((a, b) => a.id.localeCompare(b.id));
  }
}
