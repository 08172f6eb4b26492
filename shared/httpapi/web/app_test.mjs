// node --test shared/httpapi/web/app_test.mjs (run by .ci/run): the page's pure functions (the DOM code runs only in a browser).
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseSSE, citationParts, timelineLine } from "./app.js";

test("parseSSE keeps partial events for the next chunk and skips damaged ones", () => {
  let r = parseSSE('event: meta\ndata: {"protocol":1}\n\nevent: token\ndata: {"text":"Hel');
  assert.deepEqual(r.events, [{ name: "meta", data: { protocol: 1 } }]);
  r = parseSSE(r.rest + 'lo"}\r\n\r\nevent: token\ndata: {broken\n\nevent: done\ndata: {}\n\n');
  assert.deepEqual(r.events.map(e => e.name), ["token", "done"]);
  assert.equal(r.events[0].data.text, "Hello");
  assert.equal(r.rest, "");
});

test("citationParts links only markers that name a source", () => {
  assert.deepEqual(citationParts("20 days [1], see [3] and [0].", 2), [
    { text: "20 days " }, { cite: 1 }, { text: ", see [3] and [0]." },
  ]);
  assert.deepEqual(citationParts("[2][1]", 2), [{ cite: 2 }, { cite: 1 }]);
  assert.deepEqual(citationParts("<img src=x onerror=alert(1)> [1]", 1), [{ text: "<img src=x onerror=alert(1)> " }, { cite: 1 }]);
});

test("timelineLine describes the pipeline's events", () => {
  assert.equal(timelineLine("routing", { path: "AGENTIC", reason: "COMPLEX", detail: "a complex question" }), "path AGENTIC: a complex question");
  assert.equal(timelineLine("agent_step", { round: 2, calls: [{ tool: "keyword_search", query: "HR-17" }], new_evidence: 1 }),
    "search round 2: keyword_search(HR-17) → 1 new");
  assert.equal(timelineLine("token", { text: "x" }), null);
});
