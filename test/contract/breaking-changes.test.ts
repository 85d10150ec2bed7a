// The breaking-change check (scripts/check-breaking.ts): each class of change that breaks clients is
// found with its stable id, changes that do not break them pass, and the repository's own check
// (the current contract against the last release, with CHANGELOG.md) runs as `npm test` runs it.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { Node } from "../../scripts/breaking/contract.js";
import { recordedBreakingIds } from "../../scripts/breaking/changelog.js";
import { breakingChanges } from "../../scripts/breaking/operations.js";
import { runToEnd } from "../support/process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

const GET = "svc.api.shop.v1.WidgetService.Get";
const CREATE = "svc.api.shop.v1.WidgetService.Create";
const CHANGED = "widgetChanged";
const json = (ref: string) => ({ "application/json": { schema: { $ref: `#/components/schemas/${ref}` } } });

/** A small released contract: get and create a widget, and the request a receiver gets when one changes. */
function released(): Node {
  return {
    openapi: "3.1.0",
    info: { title: "t", version: "1" },
    paths: {
      "/widgets/{widget_id}": {
        parameters: [{ name: "widget_id", in: "path", required: true, schema: { type: "string" } }],
        get: {
          operationId: GET,
          parameters: [{ name: "view", in: "query", required: false, schema: { type: "string", enum: ["BASIC", "FULL"] } }],
          responses: {
            "200": { description: "ok", headers: { "X-Request-Id": { schema: { type: "string" } } }, content: json("WidgetServiceGetResponse") },
            "404": { description: "absent", content: json("Status") },
          },
        },
      },
      "/widgets": {
        post: {
          operationId: CREATE,
          requestBody: { required: true, content: json("WidgetServiceCreateRequest") },
          responses: { "200": { description: "ok", content: json("WidgetServiceGetResponse") } },
        },
      },
    },
    webhooks: {
      widgetChanged: {
        post: {
          operationId: CHANGED,
          parameters: [{ name: "Webhook-Signature", in: "header", required: true, schema: { type: "string" } }],
          requestBody: { required: true, content: json("WidgetChangedEvent") },
          responses: { "2XX": { description: "delivered" } },
        },
      },
    },
    components: {
      schemas: {
        WidgetChangedEvent: {
          type: "object",
          required: ["widgetId", "kind"],
          properties: { widgetId: { type: "string" }, kind: { type: "string", enum: ["CREATED", "RETIRED"] }, note: { type: "string" } },
        },
        Widget: {
          type: "object",
          required: ["id", "name", "state"],
          properties: {
            id: { type: "string", readOnly: true },
            name: { type: "string", maxLength: 100, pattern: "^[a-z]+$" },
            size: { type: "integer", format: "int32", minimum: 1 },
            createdAt: { type: "string", format: "date-time" },
            state: { type: "string", enum: ["ACTIVE", "RETIRED"] },
            color: { $ref: "#/components/schemas/Color" },
            tags: { type: "array", items: { type: "string", maxLength: 20 } },
          },
          additionalProperties: false,
        },
        Color: { type: "string", "x-extensible-enum": true, enum: ["RED", "BLUE"] },
        WidgetServiceGetResponse: { type: "object", required: ["widget"], properties: { widget: { $ref: "#/components/schemas/Widget" } } },
        WidgetServiceCreateRequest: {
          type: "object",
          required: ["widget"],
          properties: { widget: { $ref: "#/components/schemas/Widget" }, note: { type: ["string", "null"] }, priority: { type: "integer", maximum: 10 } },
          additionalProperties: false,
        },
        Status: { type: "object", properties: { code: { type: "integer" }, reason: { type: "string" } } },
      },
    },
  };
}

/** The ids found between the released contract and the one `change` makes of a copy of it. */
function idsAfter(change: (doc: any) => void): string[] {
  const after = structuredClone(released());
  change(after);
  return breakingChanges(released(), after).map((c) => c.id);
}

describe("breaking changes are found, each with its id", () => {
  it.each<[string, (doc: any) => void, string[]]>([
    ["an operation removed", (d) => delete d.paths["/widgets"], [`operation-removed:${CREATE}`]],
    ["an operation id renamed", (d) => (d.paths["/widgets"].post.operationId = "svc.api.shop.v1.WidgetService.Make"), [`operation-id-changed:${CREATE}`]],
    ["an operation moved", (d) => ((d.paths["/things"] = d.paths["/widgets"]), delete d.paths["/widgets"]), [`operation-moved:${CREATE}`]],
    [
      "a new required query parameter",
      (d) => d.paths["/widgets/{widget_id}"].get.parameters.push({ name: "region", in: "query", required: true, schema: { type: "string" } }),
      [`request-parameter-required:${GET}:query.region`],
    ],
    [
      "an optional parameter made required",
      (d) => (d.paths["/widgets/{widget_id}"].get.parameters[0].required = true),
      [`request-parameter-required:${GET}:query.view`],
    ],
    [
      "a new required header",
      (d) => d.paths["/widgets/{widget_id}"].get.parameters.push({ name: "X-Tenant", in: "header", required: true, schema: { type: "string" } }),
      [`request-parameter-required:${GET}:header.x-tenant`],
    ],
    [
      "a new required body field",
      (d) => d.components.schemas.WidgetServiceCreateRequest.required.push("note"),
      ["request-property-required:WidgetServiceCreateRequest.note"],
    ],
    [
      "a required request body where there was none",
      (d) => (d.paths["/widgets/{widget_id}"].get.requestBody = { required: true, content: json("WidgetServiceCreateRequest") }),
      [`request-body-required:${GET}`],
    ],
    ["a response field removed", (d) => delete d.components.schemas.Widget.properties.size, ["request-property-removed:Widget.size", "response-property-removed:Widget.size"]],
    ["a response status removed", (d) => delete d.paths["/widgets/{widget_id}"].get.responses["404"], [`response-status-removed:${GET}:404`]],
    ["a response header removed", (d) => delete d.paths["/widgets/{widget_id}"].get.responses["200"].headers["X-Request-Id"], [`response-header-removed:${GET}:200:X-Request-Id`]],
    ["a required response field made optional", (d) => (d.components.schemas.Widget.required = ["id", "name"]), ["response-property-optional:Widget.state"]],
    ["a type changed", (d) => (d.components.schemas.Widget.properties.size.type = "string"), ["request-type-changed:Widget.size", "response-type-changed:Widget.size"]],
    ["an integer widened to a number", (d) => (d.components.schemas.Widget.properties.size.type = "number"), ["response-type-changed:Widget.size"]],
    ["a format changed", (d) => (d.components.schemas.Widget.properties.size.format = "int64"), ["request-format-changed:Widget.size", "response-format-changed:Widget.size"]],
    ["a format added to a request field", (d) => (d.components.schemas.Widget.properties.name.format = "email"), ["request-format-changed:Widget.name"]],
    ["a request enum narrowed", (d) => (d.paths["/widgets/{widget_id}"].get.parameters[0].schema.enum = ["BASIC"]), [`request-enum-narrowed:${GET}:query.view`]],
    [
      "a response value removed from, and another added to, a non-extensible enum",
      (d) => (d.components.schemas.Widget.properties.state.enum = ["ACTIVE", "ARCHIVED"]),
      ["request-enum-narrowed:Widget.state", "response-enum-value-added:Widget.state", "response-enum-value-removed:Widget.state"],
    ],
    ["a maxLength made smaller", (d) => (d.components.schemas.Widget.properties.name.maxLength = 50), ["request-constraint-tightened:Widget.name:maxLength"]],
    ["a pattern changed", (d) => (d.components.schemas.Widget.properties.name.pattern = "^[a-z0-9]+$"), ["request-constraint-tightened:Widget.name:pattern"]],
    ["a minimum raised", (d) => (d.components.schemas.Widget.properties.size.minimum = 2), ["request-constraint-tightened:Widget.size:minimum"]],
    ["a constraint on array items", (d) => (d.components.schemas.Widget.properties.tags.items.maxLength = 10), ["request-constraint-tightened:Widget.tags[]:maxLength"]],
    ["null no longer accepted in a request", (d) => (d.components.schemas.WidgetServiceCreateRequest.properties.note.type = "string"), ["request-type-changed:WidgetServiceCreateRequest.note"]],
    [
      "a response field that may now be null",
      (d) => (d.components.schemas.Widget.properties.color = { oneOf: [{ $ref: "#/components/schemas/Color" }, { type: "null" }] }),
      ["response-nullable:Widget.color"],
    ],
    ["a media type removed", (d) => (d.paths["/widgets"].post.requestBody.content = { "text/plain": { schema: { type: "string" } } }), [`request-media-type-removed:${CREATE}:application/json`]],
    ["a webhook no longer sent", (d) => delete d.webhooks.widgetChanged, [`webhook-removed:${CHANGED}`]],
    ["a header a webhook no longer sends", (d) => (d.webhooks.widgetChanged.post.parameters = []), [`webhook-header-removed:${CHANGED}:header.webhook-signature`]],
    ["a header a webhook may no longer send", (d) => (d.webhooks.widgetChanged.post.parameters[0].required = false), [`webhook-header-optional:${CHANGED}:header.webhook-signature`]],
    ["a webhook's body that may no longer be sent", (d) => (d.webhooks.widgetChanged.post.requestBody.required = false), [`webhook-body-optional:${CHANGED}`]],
    [
      "a webhook's body in another media type",
      (d) => (d.webhooks.widgetChanged.post.requestBody.content = { "text/plain": { schema: { type: "string" } } }),
      [`webhook-media-type-removed:${CHANGED}:application/json`],
    ],
    ["a field a webhook's body no longer holds", (d) => delete d.components.schemas.WidgetChangedEvent.properties.widgetId, ["response-property-removed:WidgetChangedEvent.widgetId"]],
    ["a value a webhook's receiver does not expect", (d) => d.components.schemas.WidgetChangedEvent.properties.kind.enum.push("MOVED"), ["response-enum-value-added:WidgetChangedEvent.kind"]],
    ["a webhook's header of another type", (d) => (d.webhooks.widgetChanged.post.parameters[0].schema.type = "integer"), [`response-type-changed:${CHANGED}:header.webhook-signature`]],
  ])("%s", (_, change, ids) => {
    expect(idsAfter(change)).toEqual([...ids].sort());
  });

  it("names the operations a change to a shared schema reaches", () => {
    const after = structuredClone(released()) as any;
    delete after.components.schemas.Widget.properties.createdAt;
    const removed = breakingChanges(released(), after).find((c) => c.id === "response-property-removed:Widget.createdAt");
    expect(removed?.operations.sort()).toEqual([CREATE, GET].sort());
  });
});

describe("changes that do not break clients pass", () => {
  it.each<[string, (doc: any) => void]>([
    ["no change", () => undefined],
    ["a required request body made optional", (d) => (d.paths["/widgets"].post.requestBody.required = false)],
    ["an optional request field added", (d) => (d.components.schemas.WidgetServiceCreateRequest.properties.label = { type: "string", maxLength: 10 })],
    ["a response field added", (d) => (d.components.schemas.WidgetServiceGetResponse.properties.etag = { type: "string" })],
    ["a required response field added", (d) => ((d.components.schemas.WidgetServiceGetResponse.properties.etag = { type: "string" }), d.components.schemas.WidgetServiceGetResponse.required.push("etag"))],
    ["an operation added", (d) => (d.paths["/widgets"].get = { operationId: "svc.api.shop.v1.WidgetService.List", responses: { "200": { description: "ok" } } })],
    ["a response status added", (d) => (d.paths["/widgets"].post.responses["409"] = { description: "exists", content: json("Status") })],
    ["a value added to an extensible enum", (d) => d.components.schemas.Color.enum.push("GREEN")],
    ["a value added to a request enum", (d) => d.paths["/widgets/{widget_id}"].get.parameters[0].schema.enum.push("MINIMAL")],
    [
      "an optional Idempotency-Key header",
      (d) => (d.paths["/widgets"].post.parameters = [{ name: "Idempotency-Key", in: "header", required: false, schema: { type: "string", maxLength: 64 } }]),
    ],
    [
      "examples and descriptions",
      (d) => {
        d.components.schemas.Widget.description = "A widget.";
        d.components.schemas.Widget.example = { id: "w1", name: "a", state: "ACTIVE" };
        d.components.schemas.Widget.properties.name.examples = ["gear"];
        d.paths["/widgets/{widget_id}"].get.responses["200"].content["application/json"].example = { widget: { id: "w1" } };
        d.paths["/widgets/{widget_id}"].get.description = "Reads a widget.";
      },
    ],
    ["an enumeration given to a response string", (d) => (d.components.schemas.Status.properties.reason = { type: "string", "x-extensible-enum": true, enum: ["NOT_FOUND"] })],
    ["an enumeration without a type given to a response string", (d) => (d.components.schemas.Status.properties.reason = { enum: ["NOT_FOUND", "TAKEN"] })],
    ["a request field that now accepts null", (d) => (d.components.schemas.WidgetServiceCreateRequest.properties.priority.type = ["integer", "null"])],
    [
      "constraints loosened on a request",
      (d) => ((d.components.schemas.WidgetServiceCreateRequest.properties.priority.maximum = 20), delete d.components.schemas.Widget.properties.name.pattern),
    ],
    ["a webhook added", (d) => (d.webhooks.widgetRetired = structuredClone(d.webhooks.widgetChanged)) && (d.webhooks.widgetRetired.post.operationId = "widgetRetired")],
    ["a header a webhook sends added", (d) => d.webhooks.widgetChanged.post.parameters.push({ name: "Webhook-Id", in: "header", required: true, schema: { type: "string" } })],
    ["a field added to a webhook's body", (d) => (d.components.schemas.WidgetChangedEvent.properties.at = { type: "string", format: "date-time" })],
    ["an answer a webhook's receiver may give, added", (d) => (d.webhooks.widgetChanged.post.responses["410"] = { description: "gone: stop sending" })],
    ["a schema moved into its own component", (d) => ((d.components.schemas.Size = d.components.schemas.Widget.properties.size), (d.components.schemas.Widget.properties.size = { $ref: "#/components/schemas/Size" }))],
  ])("%s", (_, change) => {
    expect(idsAfter(change)).toEqual([]);
  });
});

describe("CHANGELOG.md records breaking changes by id under ### Breaking of ## [Unreleased]", () => {
  it("reads only that subsection", () => {
    const text = [
      "# Changelog",
      "Ids like `operation-removed:intro` up here do not count.",
      "## [Unreleased]",
      "### Added",
      "- `request-property-required:Added.x` is not under Breaking.",
      "### Breaking",
      "- `operation-removed:svc.api.a.v1.S.M`: use `svc.api.a.v1.S.N` instead.",
      "### Fixed",
      "- `response-property-removed:Fixed.y`",
      "## [0.1.0] - 2026-01-01",
      "### Breaking",
      "- `operation-removed:old`",
    ].join("\n");
    expect([...recordedBreakingIds(text)]).toEqual(["operation-removed:svc.api.a.v1.S.M", "svc.api.a.v1.S.N"]);
  });
});

describe("npm run check:breaking", () => {
  const check = (...args: string[]) => runToEnd(join(root, "node_modules/.bin/tsx"), [join(root, "scripts/check-breaking.ts"), ...args]);

  it("passes on this tree: every breaking change since the last release is recorded", async () => {
    const { code, out } = await check();
    expect(out).toMatch(/^Breaking changes of .*generated\/openapi\.yaml since 0\.1\.0-alpha \(.*openapi-released\/0\.1\.0-alpha\.yaml\): \d+, 0 not recorded$/m);
    expect(code).toBe(0);
  }, 60_000);

  it("fails on a breaking change until its id is recorded in the changelog", async () => {
    const dir = mkdtempSync(join(tmpdir(), "breaking-"));
    const contract = structuredClone((await import("yaml")).parse(readFileSync(join(root, "openapi-released/0.1.0-alpha.yaml"), "utf8")));
    delete contract.paths["/api/v1/funds/policy"].post;
    const current = join(dir, "openapi.yaml");
    writeFileSync(current, stringify(contract));
    const id = "operation-removed:svc.api.funds.v1.FundPolicyService.Update";
    const changelog = readFileSync(join(root, "CHANGELOG.md"), "utf8");

    const unrecorded = join(dir, "unrecorded.md");
    writeFileSync(unrecorded, changelog);
    const failed = await check("--current", current, "--changelog", unrecorded);
    expect(failed.code).toBe(1);
    expect(failed.out).toContain(`NOT RECORDED \`${id}\``);
    expect(failed.out).toContain('under "### Breaking" of "## [Unreleased]"');

    const recorded = join(dir, "recorded.md");
    writeFileSync(recorded, changelog.replace("## [Unreleased]\n\n### Breaking\n", `## [Unreleased]\n\n### Breaking\n\n- \`${id}\`: the fund policy is read-only.\n`));
    const passed = await check("--current", current, "--changelog", recorded);
    expect(passed.out).toContain(`recorded     \`${id}\``);
    expect(passed.code).toBe(0);
  }, 60_000);
});
