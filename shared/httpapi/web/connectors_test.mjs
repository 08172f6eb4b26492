// node --test shared/httpapi/web/connectors_test.mjs (run by .ci/run): the connector settings' pure
// functions (the DOM code is driven by test/browser).
import { test } from "node:test";
import assert from "node:assert/strict";
import { webSettings, parseSettings, syncCounts, lastSync, settingsSummary, canManage, intervalChoices, INTERVALS, syncProgress, enforcesPermissions, permissionsText, withEnforce } from "./connectors.js";

test("webSettings takes the URL and the prefixes one a line, by commas or spaces; none leaves the server's default", () => {
  assert.deepEqual(webSettings(" https://a.example/docs/ ", ""), { url: "https://a.example/docs/" });
  assert.deepEqual(webSettings("https://a.example/", "https://a.example/x/\nhttps://a.example/y/, https://a.example/z/"),
    { url: "https://a.example/", prefixes: ["https://a.example/x/", "https://a.example/y/", "https://a.example/z/"] });
});

test("parseSettings: empty is {}, an object passes, anything else is refused with the reason", () => {
  assert.deepEqual(parseSettings("  "), {});
  assert.deepEqual(parseSettings('{"space":"ENG"}'), { space: "ENG" });
  assert.throws(() => parseSettings("[1]"), /JSON object/);
  assert.throws(() => parseSettings("{space:"), /not valid JSON/);
  assert.throws(() => parseSettings("null"), /JSON object/);
});

test("syncCounts reads a progress object and a dry run's result (failed as a list)", () => {
  assert.equal(syncCounts({ added: 2, updated: 1, deleted: 0, failed: 1, unchanged: 3, calls: 8 }),
    "2 added · 1 updated · 0 deleted · 1 failed · 3 unchanged · 8 requests");
  assert.equal(syncCounts({ added: 0, failed: [{ id: "a" }, { id: "b" }], calls: 1 }),
    "0 added · 0 updated · 0 deleted · 2 failed · 0 unchanged · 1 request");
  assert.equal(syncCounts(undefined), "");
});

test("lastSync says never, running or the last finish", () => {
  assert.equal(lastSync({ status: "idle" }), "never synced");
  assert.match(lastSync({ status: "running", started_at: "2026-01-02T03:04:05Z" }), /^syncing since /);
  assert.match(lastSync({ status: "ok", finished_at: "2026-01-02T03:04:05Z" }), /^last sync /);
});

test("settingsSummary names what a connector reads and where its credentials come from, never more", () => {
  assert.equal(settingsSummary({ type: "web", credentials: "none", settings: { url: "https://a.example/", prefixes: ["https://a.example/"], max_pages: 5 } }),
    "url https://a.example/ · prefixes https://a.example/");
  assert.equal(settingsSummary({ type: "confluence", credentials: "file", settings: { url: "https://w.example/wiki", space: "ENG" } }),
    "url https://w.example/wiki · space ENG · credentials from a file");
});

test("only editors and owners manage connectors", () => {
  assert.equal(canManage({ role: "owner" }), true);
  assert.equal(canManage({ role: "editor" }), true);
  assert.equal(canManage({ role: "reader" }), false);
});

test("the schedule picker offers the usual intervals and keeps a connector's own other one first", () => {
  assert.deepEqual(intervalChoices("1h"), INTERVALS);
  assert.deepEqual(intervalChoices(undefined), INTERVALS);
  assert.deepEqual(intervalChoices("90m"), ["90m", ...INTERVALS]);
});

test("syncProgress: a running sync with the listing's total reads done / total with its pages; without total, done; not running, nothing", () => {
  assert.equal(syncProgress({ status: "running", progress: { listed: 40, done: 12, total: 40, pages: 3, added: 10 } }), "12 / 40 items · 3 pages listed");
  assert.equal(syncProgress({ status: "running", progress: { done: 0, total: 1, pages: 1 } }), "0 / 1 item · 1 page listed");
  assert.equal(syncProgress({ status: "running", progress: { done: 5 } }), "5 items done");
  assert.equal(syncProgress({ status: "running", progress: { done: "5", total: "<b>9</b>" } }), "0 items done");
  assert.equal(syncProgress({ status: "ok", progress: { done: 40, total: 40 } }), "");
  assert.equal(syncProgress({ status: "running" }), "");
});

test("enforce_permissions: on unless false; the form's box adds false only when unticked and the JSON says nothing", () => {
  assert.equal(enforcesPermissions({ settings: {} }), true);
  assert.equal(enforcesPermissions({ settings: { enforce_permissions: true } }), true);
  assert.equal(enforcesPermissions({ settings: { enforce_permissions: false } }), false);
  assert.equal(enforcesPermissions({}), true);
  assert.match(permissionsText({ settings: {} }), /^source permissions enforced/);
  assert.match(permissionsText({ settings: { enforce_permissions: false } }), /^source permissions not enforced/);
  assert.deepEqual(withEnforce({ space: "ENG" }, true), { space: "ENG" });
  assert.deepEqual(withEnforce({ space: "ENG" }, false), { space: "ENG", enforce_permissions: false });
  assert.deepEqual(withEnforce({ enforce_permissions: true }, false), { enforce_permissions: true });
});
