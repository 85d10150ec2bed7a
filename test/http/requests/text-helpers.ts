// What the text tests share (text-rule.test.ts, stored-text.test.ts): a server, the admin's views of
// its funds, spends and automations, and a user whose limit rows and spends the texts are written on.
import { startTestServer, type TestServer } from "../../support/server.js";
import { funds, type Funds } from "../limits/helpers.js";
import { spends, type Spends } from "../spends/helpers.js";
import { automationsApi, type AutomationsApi } from "../webhooks/helpers.js";

export interface TextServer {
  ts: TestServer;
  admin: Funds;
  spend: Spends;
  api: AutomationsApi;
  subject: { userId: string; f: Funds };
}

export async function startTextServer(): Promise<TextServer> {
  const ts = await startTestServer();
  const user = await ts.userClient(["ROLE_USER"], "Subject");
  return { ts, admin: funds(ts.admin), spend: spends(ts.admin), api: automationsApi(ts.admin), subject: { userId: user.userId, f: funds(user.client) } };
}
