// Users of the tenant: who they are and which roles they hold.
import { sql, type RawBuilder } from "kysely";
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import { recordAudit } from "../audit/audit-record.js";
import { userTarget } from "../audit/change.js";
import type { Origin } from "../core/origin.js";
import { conflict, invalidField, notFound } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { Storage } from "../storage/connect.js";
import type { UsersTable } from "../storage/schema.js";
import { writeTransaction, type BeforeCommit, type Db } from "../storage/transactions.js";
import { ROLES, type Role } from "./roles.js";

export type User = components["schemas"]["User"];

export interface NewUser {
  displayName: string;
  email: string;
  roles: readonly string[];
}

const toUser = (row: UsersTable): User => ({
  id: row.id,
  displayName: row.display_name,
  email: row.email,
  roles: JSON.parse(row.roles) as Role[],
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

function parseRoles(roles: readonly string[]): Role[] {
  roles.forEach((r, i) => {
    if (!(ROLES as readonly string[]).includes(r)) throw invalidField(`body.roles[${i}]`, `must be one of ${ROLES.join(", ")}`);
  });
  return [...new Set(roles as Role[])];
}

export class Users {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly pageTokens: PageTokens,
  ) {}

  async create(input: NewUser, beforeCommit?: BeforeCommit<User>, origin?: Origin): Promise<User> {
    const roles = parseRoles(input.roles);
    const at = this.clock.now();
    const now = new Date(at).toISOString();
    const row: UsersTable = {
      id: newId(),
      display_name: input.displayName,
      email: input.email,
      email_key: input.email.toLowerCase(),
      roles: JSON.stringify(roles),
      created_at: now,
      updated_at: now,
    };
    return writeTransaction(this.storage, { exclusive: [] }, async (db) => {
      const inserted = await db.insertInto("users").values(row).onConflict((oc) => oc.column("email_key").doNothing()).executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) throw conflict("EMAIL_TAKEN", "a user with this email already exists");
      const user = toUser(row);
      await recordAudit(db, origin, at, { operationId: "svc.api.iam.v1.UserService.Create", target: userTarget(user.id), before: null, after: user });
      await beforeCommit?.(db, user);
      return user;
    }, { origin });
  }

  async get(id: string): Promise<User> {
    const row = await this.storage.db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst();
    if (!row) throw notFound("USER_NOT_FOUND", "no user with this id", { metadata: { userId: id } });
    return toUser(row);
  }

  async exists(id: string, db: Db = this.storage.db): Promise<boolean> {
    return (await db.selectFrom("users").select("id").where("id", "=", id).executeTakeFirst()) !== undefined;
  }

  async count(): Promise<number> {
    const { n } = await this.storage.db.selectFrom("users").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    return Number(n);
  }

  /**
   * Ordered by id; `query` keeps the users whose name or email contains it (ASCII letters in any
   * case) or whose id it is. A page token is bound to the query it was issued for.
   */
  async list(size: number | undefined, token: string | undefined, query?: string): Promise<Page<User>> {
    // Without a query the scope stays "users", so tokens issued before there was one still work.
    const scope = query === undefined ? "users" : `users:${JSON.stringify(query)}`;
    const after = this.pageTokens.decode(scope, token, "query.page_token", 1);
    const limit = pageSize(size);
    let rows = this.storage.db.selectFrom("users").selectAll().orderBy("id").limit(limit + 1);
    if (query !== undefined) {
      const fold = asciiLower(this.storage.dialect);
      const pattern = `%${likeLiteral(query.replace(/[A-Z]/g, (c) => c.toLowerCase()))}%`;
      const contains = (column: "display_name" | "email") => sql<boolean>`${fold(column)} like ${pattern} escape ${LIKE_ESCAPE}`;
      rows = rows.where((eb) => eb.or([contains("display_name"), contains("email"), eb("id", "=", query)]));
    }
    if (after) rows = rows.where("id", ">", String(after[0]));
    return this.pageTokens.page(scope, await rows.execute(), limit, (r) => [r.id], toUser);
  }
}

const LIKE_ESCAPE = "\\";
const ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/** `text` as a LIKE pattern matching exactly it: `%`, `_` and the escape character escaped. */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => LIKE_ESCAPE + c);
}

/**
 * Lower case for A to Z only, on both databases: SQLite's lower() folds ASCII alone, while
 * PostgreSQL's folds every letter under most collations, so PostgreSQL translates instead and both
 * answer alike whatever the database's collation.
 */
function asciiLower(dialect: Storage["dialect"]): (column: string) => RawBuilder<string> {
  if (dialect === "sqlite") return (column) => sql<string>`lower(${sql.ref(column)})`;
  return (column) => sql<string>`translate(${sql.ref(column)}, ${ASCII_UPPER}, ${ASCII_UPPER.toLowerCase()})`;
}
