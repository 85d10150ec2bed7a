// Handlers of AutomationService, AutomationExecutionService, WebhookEventService,
// NotificationDestinationService and the webhook intake: translate, delegate, wrap.
import type { RawOperationRequest, ServiceHandlers } from "../../../generated/server.js";
import type { Automations } from "../../automations/automations.js";
import type { BulkRedrive } from "../../automations/bulk-redrive.js";
import type { AutomationExecution, Executions } from "../../automations/executions.js";
import type { NotificationDestination, NotificationDestinations } from "../../automations/notification-destinations.js";
import type { ExecutionReruns } from "../../automations/reruns.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import type { WebhookIntake } from "../../webhooks/intake.js";
import type { IntakeRoute } from "../../webhooks/listener-kinds.js";
import { keepAnswer, type RequestContext } from "../context.js";

/** What every intake operation's handler receives (x-raw-request), compared by shape: they share their path parameter. */
type IntakeRequest = Pick<RawOperationRequest<"svc.api.webhooks.v1.IncomingWebhookService.Receive">, "path" | "headers" | "readBody" | "remoteAddress" | "forwardedFor">;

type AutomationHandlers = Pick<ServiceHandlers<RequestContext>, "AutomationService" | "AutomationExecutionService" | "WebhookEventService" | "NotificationDestinationService" | "IncomingWebhookService">;

export function automationHandlers(deps: {
  automations: Automations;
  executions: Executions;
  reruns: ExecutionReruns;
  bulkRedrive: BulkRedrive;
  events: WebhookEvents;
  intake: WebhookIntake;
  destinations: NotificationDestinations;
}): AutomationHandlers {
  const { automations, executions, reruns, bulkRedrive, events, intake, destinations } = deps;
  const keepDestination = (ctx: RequestContext) => keepAnswer(ctx, (notificationDestination: NotificationDestination) => ({ notificationDestination }));
  const keepStarted = (ctx: RequestContext) => keepAnswer(ctx, (automationExecution: AutomationExecution) => ({ automationExecution }));
  /** The intake, as the operation of `route` reaches it: a listener answers only at its kind's. */
  const receive =
    (route: IntakeRoute) =>
    async ({ path, headers, readBody, remoteAddress, forwardedFor }: IntakeRequest, ctx: RequestContext) => ({
      // app.ts sets the limits on every raw request.
      webhookEvent: await intake.receive(
        { listenerId: path.listener_id, route, headers, readBody, remoteAddress, forwardedFor, limits: ctx.intakeLimits!, authenticatesWith: ctx.intakeAuthenticatesWith, authenticated: ctx.callerAuthenticated },
        ctx,
      ),
    });
  return {
    AutomationService: {
      CreateAutomation: async ({ body }, ctx) => automations.create(body.automation, keepAnswer(ctx, (saved) => saved), ctx),
      GetAutomation: async ({ path }) => ({ automation: await automations.get(path.id) }),
      GetNotificationPublicKey: async ({ path }) => automations.notificationPublicKey(path.id),
      UpdateAutomation: async ({ path, body }, ctx) => automations.update(path.id, body.automation, body.updateMask, ctx),
      DeleteAutomation: async ({ path }, ctx) => {
        await automations.delete(path.id, ctx);
        return {};
      },
      ListAutomations: async ({ query }) => {
        const page = await automations.list(query.page_size, query.page_token);
        return { list: page.items.map((automation) => ({ automation })), nextPageToken: page.nextPageToken };
      },
      RotateWebhookSecret: async ({ path, body }, ctx) => automations.rotateSecret(path.id, body.webhookSecret, keepAnswer(ctx, (rotated) => rotated), ctx),
      RotateNotificationSecret: async ({ path }, ctx) => automations.rotateNotificationSecret(path.id, keepAnswer(ctx, (rotated) => rotated), ctx),
      CheckAutomationSteps: async ({ body }) => automations.checkSteps(body.automationSteps, "samplePayload" in body ? { value: body.samplePayload, webhook: body.sampleWebhook ?? null } : undefined),
    },
    AutomationExecutionService: {
      GetAutomationExecution: async ({ path }) => ({ automationExecution: await executions.get(path.id) }),
      ListAutomationExecutions: async ({ query }) => {
        const page = await executions.list(query.automation_id, query.page_size, query.page_token);
        return { list: page.items.map((automationExecution) => ({ automationExecution })), nextPageToken: page.nextPageToken };
      },
      Redrive: async ({ path }, ctx) => ({ automationExecution: await reruns.redrive(path.id, keepStarted(ctx), ctx) }),
      // Several transactions: its answer is kept once it is complete (the key claimed meanwhile).
      BulkRedrive: async ({ path, body }, ctx) => bulkRedrive.redrive(path.id, body, ctx),
    },
    WebhookEventService: {
      ListWebhookEvents: async ({ path, query }) => {
        await automations.get(path.id);
        const page = await events.list(path.id, query.page_size, query.page_token);
        return { list: page.items.map((webhookEvent) => ({ webhookEvent })), nextPageToken: page.nextPageToken };
      },
      Replay: async ({ path }, ctx) => ({ automationExecution: await reruns.replay(path.id, path.event_id, keepStarted(ctx), ctx) }),
    },
    NotificationDestinationService: {
      List: async ({ query }) => {
        const page = await destinations.list(query.page_size, query.page_token);
        return { list: page.items.map((notificationDestination) => ({ notificationDestination })), nextPageToken: page.nextPageToken };
      },
      Get: async ({ path }) => ({ notificationDestination: await destinations.get(path.destination_id) }),
      Enable: async ({ path }, ctx) => ({ notificationDestination: await destinations.set(path.destination_id, false, keepDestination(ctx), ctx) }),
      Disable: async ({ path }, ctx) => ({ notificationDestination: await destinations.set(path.destination_id, true, keepDestination(ctx), ctx) }),
    },
    IncomingWebhookService: {
      Receive: receive("seed"),
      ReceiveStandardWebhook: receive("standardWebhooks"),
      ReceiveGithubWebhook: receive("github"),
      ReceiveStripeWebhook: receive("stripe"),
    },
  };
}
