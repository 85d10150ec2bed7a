// Table shapes as Kysely sees them. Timestamps are ISO-8601 UTC strings (`Date#toISOString`), which
// sort correctly as text on every dialect; JSON columns hold the contract's wire shapes as text.
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
  default_controls: string | null;
  updated_at: string;
}

export interface SubjectAppLimitsTable {
  id: string;
  user_id: string;
  app_id: string;
  controls: string;
  suspended: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface AppCapsTable {
  id: string;
  app_id: string;
  controls: string;
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
}
