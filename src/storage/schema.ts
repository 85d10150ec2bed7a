// Table shapes as Kysely sees them. Timestamps are ISO-8601 UTC strings (`Date#toISOString`), which
// sort correctly as text on every dialect; JSON columns hold the contract's wire shapes as text.
import type { ColumnType, Generated } from "kysely";

export interface UsersTable {
  id: string;
  display_name: string;
  email: string;
  /** Lower-cased email, unique: emails compare case-insensitively. */
  email_key: string;
  roles: string;
  created_at: string;
  updated_at: string;
}

export interface CredentialsTable {
  id: string;
  user_id: string;
  client_id: string;
  secret_hash: string;
  display_name: string;
  /** The apps a ROLE_APP_SERVICE credential is bound to, string[] as JSON; `[]` for every other. */
  app_ids: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

export interface SigningKeysTable {
  kid: string;
  private_jwk: string;
  public_jwk: string;
  created_at: string;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface FundPolicyTable {
  tenant_id: string;
  currency_code: string;
  /** IANA time zone name of the spend windows. */
  time_zone: string;
  default_controls: string | null;
  /** Null until the policy is first changed. */
  updated_at: string | null;
}

export interface SubjectAppLimitsTable {
  id: string;
  user_id: string;
  app_id: string;
  controls: string;
  /** 1 when a suspension is present (the Search filter), else 0. */
  suspended: number;
  /** The currency of the amounts in `controls`, null when it holds none (the currency-in-use check). */
  amount_currency: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface AppCapsTable {
  id: string;
  app_id: string;
  controls: string;
  /** The currency of the amounts in `controls`, null when it holds none. */
  amount_currency: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface Database {
  users: UsersTable;
  credentials: CredentialsTable;
  signing_keys: SigningKeysTable;
  settings: SettingsTable;
  fund_policy: FundPolicyTable;
  subject_app_limits: SubjectAppLimitsTable;
  app_caps: AppCapsTable;
  automations: AutomationsTable;
  webhook_listeners: WebhookListenersTable;
  webhook_secrets: WebhookSecretsTable;
  notification_secrets: NotificationSecretsTable;
  notification_signing_keys: NotificationSigningKeysTable;
  webhook_events: WebhookEventsTable;
  automation_executions: AutomationExecutionsTable;
  token_failures: TokenFailuresTable;
  idempotency_records: IdempotencyRecordsTable;
  instance_heartbeats: InstanceHeartbeatsTable;
  spend_authorizations: SpendAuthorizationsTable;
  spend_ledger: SpendLedgerTable;
  spend_usage: SpendUsageTable;
  change_versions: ChangeVersionsTable;
  audit_events: AuditEventsTable;
  /** Where changes record their events: on SQLite, those not yet moved into audit_events (src/audit/audit-inbox.ts); on PostgreSQL, a view writing through to it. */
  audit_inbox: AuditEventsTable;
  fund_threshold_firings: FundThresholdFiringsTable;
  notification_destinations: NotificationDestinationsTable;
}

/** A destination of `notify` steps (host and port) that failed at least once: its health. */
export interface NotificationDestinationsTable {
  /** `dst_` and a digest of `destination`. */
  id: string;
  /** `host:port`. */
  destination: string;
  /** Attempts failed in a row (a success resets it). */
  consecutive_failures: number;
  /** The first failure of those in a row; null once an attempt succeeds. */
  failing_since: string | null;
  /** While later than now, the circuit is open: no attempt is made to it. */
  open_until: string | null;
  /** Disabled (after failing for the configured period, or by a super admin): its notifications fail at once. */
  disabled_at: string | null;
  last_error: string | null;
  updated_at: string;
}

/** One change and who made it (src/audit/): inserted in the change's own transaction, never updated. */
export interface AuditEventsTable {
  /** Time-ordered (src/core/ids.ts) at the instant of created_at: List orders by it alone, and a time range is a range of ids. */
  id: string;
  operation_id: string;
  target_kind: string;
  target_id: string;
  /** The target's user and app, or '' where it has none. */
  target_user_id: string;
  target_app_id: string;
  /** USER or AUTOMATION_EXECUTION, with '' in the fields of the other kind. */
  actor_kind: string;
  actor_user_id: string;
  actor_credential_id: string;
  actor_automation_id: string;
  actor_execution_id: string;
  actor_event_id: string;
  request_id: string;
  /** JSON of the target as the API answers it, or null. */
  before_state: string | null;
  after_state: string | null;
  created_at: string;
}

/**
 * An int64 of nanos: written as a BigInt (SQLite) or its decimal string (PostgreSQL), read back as
 * the decimal string of `cast(... as text)`, so no value passes through a lossy JS number.
 */
export type Nanos = ColumnType<string, bigint | string, bigint | string>;
/** An int64 count, read as a decimal string as nanos are. */
export type Count = Nanos;

/** A spend authorization (src/funds/spends/spend-authorizations.ts): the request, its decision, and where it stands. */
export interface SpendAuthorizationsTable {
  /** Time-ordered (src/core/ids.ts) at the instant of created_at: List orders by it alone. */
  id: string;
  user_id: string;
  app_id: string;
  /** The fund currency when it was decided. */
  currency_code: string;
  amount_nanos: Nanos;
  captured_nanos: Nanos;
  reversed_nanos: Nanos;
  /** PENDING, CAPTURED, RELEASED or DECLINED; a PENDING row past expires_at is answered EXPIRED. */
  state: string;
  /** Null when nothing was held (declined, captured at once). */
  expires_at: string | null;
  window_start: string;
  window_end: string;
  /** The decision as answered (SpendDecision), JSON. */
  decision: string;
  /** SpendMetadata, JSON. */
  metadata: string;
  created_at: string;
  updated_at: string;
}

/** Append-only: one entry per effect on an authorization (HOLD, CAPTURE, RELEASE, REVERSAL). */
export interface SpendLedgerTable {
  id: string;
  authorization_id: string;
  user_id: string;
  app_id: string;
  window_start: string;
  kind: string;
  amount_nanos: Nanos;
  at: string;
}

/**
 * One per subject, app and window, counting every authorization made in [window_start, window_end):
 * `spent_nanos` = captured - reversed.
 */
export interface SpendUsageTable {
  user_id: string;
  app_id: string;
  window_start: string;
  window_end: string;
  spent_nanos: Nanos;
  /** The window's pending holds that expire after `held_through`. */
  held_nanos: Generated<Nanos>;
  /** An ISO instant, or '' (before every instant). */
  held_through: Generated<string>;
  /** How many pending holds `held_nanos` sums. */
  held_count: Generated<Count>;
  /** How many of the window's authorizations were captured (reversed or not). */
  captured_count: Generated<Count>;
}

/** A running instance: each refreshes its row; rows not refreshed lately are of instances gone. */
export interface InstanceHeartbeatsTable {
  /** Random, per process start. */
  id: string;
  started_at: string;
  last_seen: string;
}

/** A counter per kind of cached state, bumped by every change to it (src/storage/change-versions.ts). */
export interface ChangeVersionsTable {
  /** The kind of state, e.g. `principals`. */
  name: string;
  /** A number (SQLite) or its decimal string (PostgreSQL bigint): only compared for change. */
  version: ColumnType<number | string, number, never>;
}

/** A request made with an Idempotency-Key: claimed while it runs, then its answer, for replays. */
export interface IdempotencyRecordsTable {
  /** SHA-256 of the caller and the key, base64url. */
  id: string;
  /** SHA-256 of what makes two requests the same (operation, path, query, body), base64url. */
  fingerprint: string;
  /** A random id of the attempt holding the record: only it may complete or release it. */
  owner: string;
  /** While the request runs: until when its attempt holds the record. Null once answered. */
  locked_until: string | null;
  /** The answer (status, headers, body) as JSON sealed by the secret box; null while the request runs. */
  answer: string | null;
  created_at: string;
}

/** Failed token requests of one key (client id and source address) within the throttle's window. */
export interface TokenFailuresTable {
  /** SHA-256 of the key, base64url. */
  key: string;
  /** Epoch milliseconds of each attempt, as a JSON array. */
  attempts: string;
  last_at: string;
}

export interface AutomationsTable {
  id: string;
  display_name: string;
  description: string;
  is_draft: number;
  enabled: number;
  /** AutomationStep[] as JSON. */
  steps: string;
  created_at: string;
  updated_at: string;
  /**
   * The fund-event trigger (src/automations/fund-triggers.ts) as JSON, `{ eventTypes,
   * usageThresholdPercents, conditionCel }`; null without one.
   */
  fund_trigger?: string | null;
}

export interface WebhookListenersTable {
  id: string;
  automation_id: string;
  /** The listener's kind (src/webhooks/listener-kinds.ts). */
  method: "hmac" | "jwt" | "standardWebhooks" | "github" | "stripe";
  jwks_url: string | null;
  /** A `standardWebhooks` listener's Ed25519 public key, `whpk_...`; null for every other listener. */
  public_key?: string | null;
  /** string[] as JSON. */
  allowed_cidrs: string;
  created_at: string;
}

export interface WebhookSecretsTable {
  id: string;
  listener_id: string;
  /** AES-256-GCM sealed secret (see src/webhooks/secret-box.ts), never the plain secret. */
  sealed: string;
  created_at: string;
  /** Null for the current secret; a rotated-out secret stays valid until then. */
  expires_at: string | null;
}

export interface NotificationSigningKeysTable {
  automation_id: string;
  /** AES-256-GCM sealed Ed25519 private key (`whsk_`, bound to its automation), never the plain key. */
  sealed: string;
  /** The raw 32-byte public key, standard base64: what is published. */
  public_key: string;
  created_at: string;
}

export interface NotificationSecretsTable {
  id: string;
  automation_id: string;
  /** AES-256-GCM sealed `whsec_...` secret (bound to its automation), never the plain secret. */
  sealed: string;
  created_at: string;
  /** Null for the current secret; a rotated-out secret keeps signing until then. */
  expires_at: string | null;
}

export interface WebhookEventsTable {
  listener_id: string;
  /** As the listener's kind names it (src/webhooks/listener-kinds.ts): an `hmac` or `jwt` listener's is a lower-case UUID. */
  event_id: string;
  /** The event's type, where the sender's scheme carries one. */
  event_type?: string | null;
  automation_id: string;
  received_at: string;
  outcome: string;
  not_run_reason: string | null;
  execution_id: string | null;
}

export interface AutomationExecutionsTable {
  id: string;
  automation_id: string;
  event_id: string | null;
  state: string;
  /** { trigger, webhook } as JSON (`webhook`: the delivery, src/webhooks/delivery.ts; absent for a fund event). */
  context: string;
  /** The automation's steps as they were when the event arrived, as JSON. */
  steps: string;
  /** StepResult[] as JSON. */
  step_results: string;
  created_at: string;
  completed_at: string | null;
  /** A run in progress holds the execution until then; after it, another worker may resume it. */
  lease_until: string | null;
  /** A parked execution (waiting between a notification's attempts) is claimed again from then; null in any other state. */
  next_attempt_at?: string | null;
  attempts: number;
  /**
   * The W3C `traceparent` of the request that accepted the event, when traced: the execution's span
   * continues its trace, whichever instance runs it. Absent from rows written by
   * code that does not trace (older releases, tests).
   */
  trace_parent?: string | null;
  /**
   * What started it when not its automation's trigger: an
   * AutomationExecutionOrigin, `AUTOMATION_EXECUTION_ORIGIN_REDRIVE` or `_REPLAY`; null (or absent)
   * for the trigger's own executions, which every other writer inserts.
   */
  origin?: string | null;
  /** The failed execution a redrive runs again (unique: redriven at most once). */
  redrive_of?: string | null;
  /**
   * How deep in a chain of fund events the execution is: that of the fund event that started it, 0
   * for a webhook's (absent: 0). Events its steps cause are one deeper.
   */
  depth?: number;
}

/**
 * A usage threshold of a fund-event trigger fired in a spend window: the primary key makes it fire
 * once per automation, subject, app, window and threshold (src/automations/fund-triggers.ts).
 */
export interface FundThresholdFiringsTable {
  automation_id: string;
  user_id: string;
  app_id: string;
  window_start: string;
  window_end: string;
  percent: number;
  fired_at: string;
}
