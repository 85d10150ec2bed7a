// Handlers of SandboxClockService: bound only on a server started as the sandbox (server.ts); on
// any other, app.ts answers its operations 404 SANDBOX_ONLY.
import type { ServiceHandlers } from "../../../generated/server.js";
import { advanceSeconds, type SandboxClock } from "../../sandbox/sandbox-clock.js";
import { keepAnswer, type RequestContext } from "../context.js";

export type SandboxHandlers = Pick<ServiceHandlers<RequestContext>, "SandboxClockService">;

export function sandboxHandlers(clock: SandboxClock): SandboxHandlers {
  return {
    SandboxClockService: {
      Get: async () => ({ sandboxClock: clock.view() }),
      Advance: async ({ body }, ctx) => ({ sandboxClock: await clock.advance(advanceSeconds(body.duration), ctx, keepAnswer(ctx, (sandboxClock) => ({ sandboxClock }))) }),
    },
  };
}
