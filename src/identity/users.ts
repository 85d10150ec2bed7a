// Users of the tenant: who they are and which roles they hold.
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

  /** Ordered by id. */
  async list(size: number | undefined, token: string | undefined): Promise<Page<User>> {
    const scope = "users";
    const after = this.pageTokens.decode(scope, token, "query.page_token", 1);
    const limit = pageSize(size);
    let query = this.storage.db.selectFrom("users").selectAll().orderBy("id").limit(limit + 1);
    if (after) query = query.where("id", ">", String(after[0]));
    return this.pageTokens.page(scope, await query.execute(), limit, (r) => [r.id], toUser);
  }
}
