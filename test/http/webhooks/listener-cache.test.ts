// The intake keeps each listener it read (with its secrets and its automation's state) while the
// listeners' change watch trusts it (src/webhooks/listeners.ts, src/storage/change-versions.ts):
// each kind of change through this instance shows in its very next delivery; a replaced secret
// stops at the end of its grace period, kept or not; a change recorded by anyone else in the
// database shows within 1 s; a change not recorded is not seen at all, which shows that a kept
// listener costs no query; when the last poll is no longer fresh, the listener is read every time.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { recordChange } from "../../../src/storage/change-versions.js";
import type { Storage } from "../../../src/storage/connect.js";
import { writeTransaction } from "../../../src/storage/transactions.js";
import { testDialect } from "../../support/database.js";
import type { TestServer } from "../../support/server.js";
import { BOUND_MS, cacheTestServers, msUntilSeen } from "../identity/principal-cache-helpers.js";
import { automationsApi, createHooked, errorInfo, sendHmac, type Answer, type Hooked } from "./helpers.js";

const servers = cacheTestServers("listenersPoll");

/** What a delivery signed with `secret` got: its outcome when accepted, else its status and reason. */
const outcome = (a: Answer): string => (a.status === 200 ? String(a.body.webhookEvent.outcome) : `${a.status} ${errorInfo(a.body).reason ?? ""}`.trim());

const deliver = async (server: TestServer, hook: Hooked, secret = hook.secret) => outcome(await sendHmac(server, hook.url, secret));

/** A published, enabled HMAC automation whose listener the server has read (and kept). */
async function hooked(server: TestServer): Promise<Hooked> {
  const hook = await createHooked(server);
  for (let i = 0; i < 3; i++) expect(await deliver(server, hook)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");
  return hook;
}

/** Disables the automation as no operation does: straight to its row, with the version or without. */
async function disable(db: Storage, hook: Hooked, options: { record: boolean }): Promise<void> {
  await writeTransaction(db, { exclusive: [] }, async (trx) => {
    await trx.updateTable("automations").set({ enabled: 0 }).where("id", "=", hook.id).execute();
    if (options.record) await recordChange(trx, "listeners");
  });
}

describe(`kept webhook listeners on one instance (${testDialect()})`, () => {
  it("each kind of change through this instance shows in its very next delivery", async () => {
    const server = servers.local;
    const api = automationsApi(server.admin);
    const hook = await hooked(server);
    // The contract wants the automation's name in every update's body; the mask says what changes.
    const update = async (fields: object, mask: string) => unwrap(await api.update(hook.id, { displayName: "kept", ...fields }, mask));

    const rotated = unwrap(await api.rotate(hook.id)).webhookSecret;
    expect(await deliver(server, hook, rotated)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");
    // The replaced secret is in its grace period.
    expect(await deliver(server, hook)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");

    await update({ enabled: false }, "enabled");
    expect(await deliver(server, hook, rotated)).toBe("WEBHOOK_EVENT_OUTCOME_NOT_RUN_DISABLED");
    await update({ enabled: true, isDraft: true }, "enabled,isDraft");
    expect(await deliver(server, hook, rotated)).toBe("WEBHOOK_EVENT_OUTCOME_NOT_RUN_DRAFT");
    await update({ isDraft: false, triggers: [{ webhook: { hmac: {}, allowedSourceCidrs: ["10.0.0.0/8"] } }] }, "isDraft,triggers");
    expect(await deliver(server, hook, rotated)).toBe("403 SOURCE_NOT_ALLOWED");
    await update({ triggers: [{ webhook: { hmac: {} } }] }, "triggers");
    expect(await deliver(server, hook, rotated)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");

    unwrap(await api.delete(hook.id));
    expect(await deliver(server, hook, rotated)).toBe("404 LISTENER_NOT_FOUND");
  });

  it("a replaced secret stops at the end of its grace period, though the listener is kept", async () => {
    const server = servers.local;
    const hook = await hooked(server);
    const rotated = unwrap(await automationsApi(server.admin).rotate(hook.id)).webhookSecret;
    // Read (and kept) with both secrets.
    expect(await deliver(server, hook)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");
    server.clock.advance(24 * 3600 * 1000 + 1000);
    expect(await deliver(server, hook)).toBe("401 INVALID_SIGNATURE");
    expect(await deliver(server, hook, rotated)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");
  });

  it("a change written without its version is not seen (no query per delivery); once the version moves, it is within 1 s", async () => {
    const hook = await hooked(servers.ts);
    await disable(servers.storage, hook, { record: false });
    await new Promise((r) => setTimeout(r, 600));
    expect(await deliver(servers.ts, hook)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");
    const since = performance.now();
    await writeTransaction(servers.storage, { exclusive: [] }, (db) => recordChange(db, "listeners"));
    const seen = async () => {
      const got = await deliver(servers.ts, hook);
      return got === "WEBHOOK_EVENT_OUTCOME_NOT_RUN_DISABLED" || got;
    };
    expect(await msUntilSeen(since, seen)).toBeLessThan(BOUND_MS);
  });

  it("when the last poll is no longer fresh, nothing kept is trusted: a change written without its version is seen by the next delivery", async () => {
    const hook = await hooked(servers.stale);
    await disable(servers.staleStorage, hook, { record: false });
    expect(await deliver(servers.stale, hook)).toBe("WEBHOOK_EVENT_OUTCOME_NOT_RUN_DISABLED");
  });
});
