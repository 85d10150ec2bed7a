// Shared by the fund-event tests: automations on fund events, and their executions as listed.
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { schemaErrors } from "../../support/contract.js";
import type { Schemas } from "../limits/helpers.js";

export type FundEvent = Schemas["FundEvent"];
export type Execution = Schemas["AutomationExecution"];
type Step = Schemas["AutomationStep"];

/** A published, enabled automation on `fundEvents`, with `steps` (by default one that reads the event's type). */
export async function fundAutomation(client: ApiClient, fundEvents: Schemas["FundEventTrigger"], steps?: Step[]): Promise<string> {
  const saved = unwrap(
    await client.POST("/api/v1/automations", {
      body: {
        automation: {
          displayName: `fund events ${randomUUID()}`,
          isDraft: false,
          enabled: true,
          triggers: [{ fundEvents }],
          automationSteps: (steps as never) ?? [{ stepName: "read", evaluateExpressions: { expressions: [{ name: "type", expression: "ctx.trigger.type" }] } }],
        },
      },
    }),
  );
  return saved.automation.id!;
}

/** Every execution of the automation, newest first. */
export async function executionsOf(client: ApiClient, automationId: string): Promise<Execution[]> {
  const all: Execution[] = [];
  let token = "";
  do {
    const page = unwrap(await client.GET("/api/v1/automation_executions", { params: { query: { automation_id: automationId, page_size: 100, ...(token ? { page_token: token } : {}) } } }));
    all.push(...page.list.map((e) => e.automationExecution));
    token = page.nextPageToken;
  } while (token);
  return all;
}

const finishedState = (e: Execution) => e.state === "AUTOMATION_EXECUTION_STATE_DONE" || e.state === "AUTOMATION_EXECUTION_STATE_ERROR";

/** Waits until the automation has `count` executions, all finished, and answers them oldest first; fails on more. */
export async function settledExecutions(clients: ApiClient[], automationId: string, count: number, timeoutMs = 20_000): Promise<Execution[]> {
  const until = Date.now() + timeoutMs;
  for (let i = 0; ; i++) {
    const found = await executionsOf(clients[i % clients.length]!, automationId);
    if (found.length > count) throw new Error(`expected ${count} executions, found ${found.length}`);
    if (found.length === count && found.every(finishedState)) return found.reverse();
    if (Date.now() > until) throw new Error(`expected ${count} finished executions, found ${found.length}: ${found.map((e) => e.state).join(", ")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits a moment, then checks that the automation has exactly `count` executions (none started late). */
export async function stillExecutions(client: ApiClient, automationId: string, count: number, waitMs = 1_500): Promise<Execution[]> {
  await new Promise((r) => setTimeout(r, waitMs));
  const found = await executionsOf(client, automationId);
  expect(found).toHaveLength(count);
  return found.reverse();
}

/** The fund event an execution ran on (its `ctx.trigger`), which must be as the contract declares its kind. */
export function eventOf(e: Execution): FundEvent {
  expect(schemaErrors("FundEventPayload", e.context.trigger), `the ${String((e.context.trigger as FundEvent).type)} of ${e.id} as FundEventPayload declares it`).toEqual([]);
  return e.context.trigger as FundEvent;
}
