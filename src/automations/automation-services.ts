// The automations room's services as a server runs them: automations and their notification
// secrets, the execution worker with its runner and notifier, and executions' reads, reruns and
// bulk redrives.
import type { Config } from "../config.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import type { PageTokens } from "../core/pagination.js";
import type { FundPolicies } from "../funds/fund-policy.js";
import type { SubjectAppLimits } from "../funds/subject-app-limits.js";
import type { Storage } from "../storage/connect.js";
import type { Listeners, OutboundOptions, SecretBox, WebhookEvents } from "../webhooks/for-automations.js";
import { Automations } from "./automations.js";
import { BulkRedrive } from "./bulk-redrive.js";
import { workerHandOff } from "./event-hand-off.js";
import { Executions } from "./executions.js";
import type { FundTriggers } from "./fund-triggers.js";
import { NotificationSecrets } from "./notification-secrets.js";
import { NotificationSigningKeys } from "./notification-signing-keys.js";
import { DestinationSlots } from "./destination-slots.js";
import { NotificationDestinations } from "./notification-destinations.js";
import { Notifier } from "./notify.js";
import { ExecutionReruns } from "./reruns.js";
import type { RunObserver } from "./run-observer.js";
import { ExecutionRunner } from "./runner.js";
import { Worker, WORKER_DEFAULTS } from "./worker.js";

export interface AutomationWiring {
  storage: Storage;
  clock: Clock;
  logger: Logger;
  pageTokens: PageTokens;
  /** Seals the notification secrets. */
  box: SecretBox;
  listeners: Listeners;
  events: WebhookEvents;
  policy: FundPolicies;
  limits: SubjectAppLimits;
  fundTriggers: FundTriggers;
  config: Pick<Config, "baseUrl" | "jwksAllowInsecure" | "notificationAllowInsecure" | "webhookSecretGraceSeconds" | "executionLeaseSeconds" | "executionWorkerRuns" | "notifications" | "bulkRedrive">;
  /** How `notify` steps call out, beyond the configuration (tests: a DNS resolver, a CA). */
  notifications?: Omit<OutboundOptions, "allowInsecure">;
  observer?: RunObserver;
  /** How long the worker may make no progress while runs are due before readiness calls it stuck. */
  workerStuckMs?: number;
}

export function automationServices(w: AutomationWiring) {
  const { storage, clock, logger, config } = w;
  const notificationSecrets = new NotificationSecrets(clock, w.box, config.webhookSecretGraceSeconds);
  const notificationKeys = new NotificationSigningKeys(clock, w.box);
  const automations = new Automations(storage, clock, w.listeners, w.policy, w.pageTokens, notificationSecrets, notificationKeys, {
    baseUrl: config.baseUrl,
    allowInsecureJwks: config.jwksAllowInsecure,
    allowInsecureNotifications: config.notificationAllowInsecure,
  }, w.fundTriggers);
  const leaseMs = config.executionLeaseSeconds * 1000;
  const { maxInFlightPerDestination, health, ...settings } = config.notifications;
  const destinations = new NotificationDestinations(storage, clock, health, w.pageTokens);
  const notifier = new Notifier(clock, { ...w.notifications, allowInsecure: config.notificationAllowInsecure, settings, slots: new DestinationSlots(maxInFlightPerDestination), destinations });
  const runner = new ExecutionRunner({ storage, clock, limits: w.limits, logger, notifier, notificationSecrets, notificationKeys, observer: w.observer, fundTriggers: w.fundTriggers });
  const worker = new Worker({ storage, clock, events: w.events, logger, runner }, { ...WORKER_DEFAULTS, leaseMs, maxRuns: config.executionWorkerRuns, stuckMs: w.workerStuckMs ?? leaseMs });
  w.fundTriggers.attach(worker);
  const executions = new Executions(storage, w.pageTokens);
  // Redrives and replays are handed to this process's worker, as the intake's executions are.
  const reruns = new ExecutionReruns({ storage, clock, events: w.events, handOff: workerHandOff(worker) });
  const bulkRedrive = new BulkRedrive({ storage, clock, pageTokens: w.pageTokens, settings: config.bulkRedrive, wake: () => worker.notify() });
  return { automations, worker, executions, reruns, bulkRedrive, destinations };
}
