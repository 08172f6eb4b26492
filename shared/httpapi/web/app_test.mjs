// node --test shared/httpapi/web/app_test.mjs (run by .ci/run): the page's pure functions, imported from the
// modules that hold them (the DOM code runs only in a browser); importing app.js checks every module links.
import { test } from "node:test";
import assert from "node:assert/strict";
import "./app.js";
import { parseSSE, timelineLine } from "./chat.js";
import { citationParts } from "./markdown.js";

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

import { parseMarkdown, parseInline, plainText, safeHref } from "./markdown.js";
import { dayLabel, groupConversations } from "./conversations.js";
import { confidenceReason } from "./chat.js";
import { stageSummary, chunkTree, isBusy } from "./kbs.js";

test("safeHref keeps only absolute http and https links", () => {
  assert.equal(safeHref("https://example.com/a?b=1"), "https://example.com/a?b=1");
  assert.equal(safeHref(" http://x.y "), "http://x.y/");
  for (const bad of ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,<script>", "/relative", "//evil.example", "vbscript:x", "file:///etc/passwd", ""]) {
    assert.equal(safeHref(bad), null, bad);
  }
});

test("parseInline: emphasis, code, safe links, citations; images and unsafe links become text", () => {
  assert.deepEqual(parseInline("**20 days** [1] `code` [x](https://a.b)", 1), [
    { t: "strong", c: [{ t: "text", v: "20 days" }] }, { t: "text", v: " " }, { t: "cite", n: 1 }, { t: "text", v: " " },
    { t: "code", v: "code" }, { t: "text", v: " " }, { t: "link", href: "https://a.b/", c: [{ t: "text", v: "x" }] },
  ]);
  assert.deepEqual(parseInline("![secret](https://evil.example/x.png?d=1) [a](javascript:alert`1`)", 0), [{ t: "text", v: "secret a" }]);
  assert.deepEqual(parseInline("[9] stays", 2), [{ t: "text", v: "[9] stays" }]);
});

test("parseMarkdown: headings, lists, tables, code, quotes; raw HTML stays text", () => {
  const md = "# Leave\n\nintro\ntext\n\n- a\n- b\n\n1. one\n2. two\n\n| k | v |\n| --- | --- |\n| x | 1 |\n\n```\n<b>x</b>\n```\n\n> quoted\n\n<img src=x onerror=alert(1)>";
  assert.deepEqual(parseMarkdown(md).map(b => b.type), ["h", "p", "ul", "ol", "table", "code", "quote", "p"]);
  const blocks = parseMarkdown(md);
  assert.equal(blocks[4].rows[0][1][0].v, "1");
  assert.equal(blocks[5].text, "<b>x</b>");
  assert.deepEqual(blocks[7].inl, [{ t: "text", v: "<img src=x onerror=alert(1)>" }]);
});

test("plainText renders a flattened markdown snippet as text", () => {
  assert.equal(plainText("Handbook ## Leave | Type | Days | | --- | --- | | Annual | 20 |"), "Handbook Leave · Type · Days; Annual · 20");
  assert.equal(plainText("# 年假\n\n**正式员工** 每年 20 天"), "年假 正式员工 每年 20 天");
  assert.equal(plainText("C# is #1"), "C# is #1");
});

test("dayLabel and groupConversations: by day, newest first, no duplicates, filtered", () => {
  const now = new Date(2026, 10, 30, 12, 0);
  assert.equal(dayLabel(new Date(2026, 10, 30, 1).toISOString(), now), "Today");
  assert.equal(dayLabel(new Date(2026, 10, 29, 23).toISOString(), now), "Yesterday");
  assert.equal(dayLabel(new Date(2026, 10, 26, 9).toISOString(), now), "Thursday");
  assert.equal(dayLabel(new Date(2026, 9, 2, 9).toISOString(), now), "2026-10-02");
  const list = [
    { id: "a", title: "Leave days", updated_at: new Date(2026, 10, 30, 11).toISOString() },
    { id: "a", title: "Leave days", updated_at: new Date(2026, 10, 30, 11).toISOString() },
    { id: "b", title: "Expenses", updated_at: new Date(2026, 10, 30, 9).toISOString() },
    { id: "c", title: "leave carry-over", updated_at: new Date(2026, 10, 28, 9).toISOString() },
  ];
  assert.deepEqual(groupConversations(list, "", now).map(g => [g.label, g.items.map(c => c.id)]), [["Today", ["a", "b"]], ["Saturday", ["c"]]]);
  assert.deepEqual(groupConversations(list, "LEAVE", now).map(g => g.items.map(c => c.id)), [["a"], ["c"]]);
});

test("confidenceReason, stageSummary, chunkTree, isBusy", () => {
  assert.equal(confidenceReason({ citation_coverage: 0.5, retrieval_signal: 0.72, invalid_citations: 1 }), "50% of sentences cited, retrieval signal 0.72, 1 invalid citation");
  assert.equal(stageSummary({ extract: 12, chunk: 3 }), "extract 12 ms · chunk 3 ms");
  assert.equal(stageSummary(undefined), "");
  const tree = chunkTree([
    { id: "c2", parent_id: "p1", chunk_index: 2 }, { id: "p1", chunk_index: 0 }, { id: "c1", parent_id: "p1", chunk_index: 1 },
    { id: "x", parent_id: "gone", chunk_index: 5 }, { id: "p2", chunk_index: 3 },
  ]);
  assert.deepEqual(tree.map(n => [n.chunk.id, n.depth]), [["p1", 0], ["c1", 1], ["c2", 1], ["p2", 0], ["x", 1]]);
  assert.equal(isBusy({ status: "processing" }) && isBusy({ status: "pending" }) && !isBusy({ status: "ready" }), true);
});

import { findClaim, claimNeedle, liveLink } from "./markdown.js";

test("stageSummary lists stages in pipeline order, not the alphabetical order JSON from a Go map has", () => {
  assert.equal(stageSummary({ chunk: 3, embed: 40, extract: 12, index: 5 }), "extract 12 ms · chunk 3 ms · embed 40 ms · index 5 ms");
  assert.equal(stageSummary({ compress: 1, fusion: 2, grade: 3, rerank: 4, retrieval: 5, zz_new: 6 }),
    "retrieval 5 ms · fusion 2 ms · rerank 4 ms · grade 3 ms · compress 1 ms · zz_new 6 ms");
});

test("findClaim finds a claim across the text split by citation buttons, with or without a space before the period", () => {
  // the rendered answer: "Employees get 20 days " [1] ". Managers get 40 days " [1] "."
  const segs = ["Employees get ", "20 days", " of leave ", ". Managers get 40 days ", "."];
  for (const sentence of ["Managers get 40 days.", "Managers get 40 days .", "Managers get 40 days [1]."]) {
    assert.deepEqual(findClaim(segs, sentence), { start: [3, 2], end: [3, 22], next: 43 }, sentence);
  }
  // markdown emphasis in the claim, none in the text; a match across segments
  assert.deepEqual(findClaim(segs, "Employees get **20 days** of leave ."), { start: [0, 0], end: [2, 9], next: 25 });
  // line breaks and repeated spaces in the answer are not in the claim
  assert.deepEqual(findClaim(["Managers\n  get 40\ndays"], "Managers get 40 days."), { start: [0, 0], end: [0, 22], next: 17 });
  assert.equal(findClaim(segs, "Interns get 5 days."), null);
  assert.equal(findClaim(segs, "[1]."), null, "nothing left to find");
  assert.equal(claimNeedle("Managers get **40** days [2]。"), "Managersget40days");
});

test("liveLink keeps a link live only to this origin or to one of the answer's sources", () => {
  const sources = [{ n: 1, url: "https://example.org/policy" }, { n: 2, file_name: "a.md" }];
  assert.equal(liveLink("https://example.org/policy", sources, "http://127.0.0.1:8080"), "https://example.org/policy");
  assert.equal(liveLink("http://127.0.0.1:8080/#kb", sources, "http://127.0.0.1:8080"), "http://127.0.0.1:8080/#kb");
  assert.equal(liveLink("https://exfil.example/?d=SECRET", sources, "http://127.0.0.1:8080"), null);
  assert.equal(liveLink("https://example.org/policy?d=SECRET", sources, "http://127.0.0.1:8080"), null, "a source's URL with more on it is another URL");
  assert.equal(liveLink("javascript:alert(1)", [{ url: "javascript:alert(1)" }], ""), null);
  assert.equal(liveLink("https://example.org/policy", undefined, ""), null);
});

test("claimNeedle reads a cited table row as its cells' text, as the rendered table has it", () => {
  assert.equal(claimNeedle("| Managers | 45 |"), "Managers45");
  assert.equal(claimNeedle("| Annual | 45 [1] |"), "Annual45");
  assert.equal(claimNeedle("| Annual | | 45 |"), "Annual45", "an empty cell adds nothing");
  assert.equal(claimNeedle("Managers get 45·days."), "Managersget45days");
  // a "|" in prose (not a table) is left out on both sides, so the sentence is still found
  assert.notEqual(findClaim(["Plans A | B cost 45 dollars "], "Plans A | B cost 45 dollars [1]."), null);
  // the rendered table: one text node per cell, the citation button left out
  assert.deepEqual(findClaim(["Role", "Days", "Staff", "20 ", "Managers", "45 "], "| Managers | 45 |"), { start: [4, 0], end: [5, 2], next: 25 });
});

test("findClaim looks after the previous claim's match, and a claim's outside link is its label", () => {
  // "Managers get 45 days." said twice: uncited first, then cited (the claim)
  const segs = ["Managers get 45 days. Staff get 20 days ", ". Managers get 45 days ", "."];
  const first = findClaim(segs, "Staff get 20 days.");
  assert.deepEqual(first, { start: [0, 22], end: [0, 39], next: 32 });
  assert.deepEqual(findClaim(segs, "Managers get 45 days.", first.next), { start: [1, 2], end: [1, 22], next: 50 });
  assert.deepEqual(findClaim(segs, "Managers get 45 days."), { start: [0, 0], end: [0, 20], next: 17 }, "from the start, the first");
  assert.equal(findClaim(segs, "Staff get 20 days.", first.next), null, "nothing after itself");
  // an outside link renders as "label (url)"; the page leaves the " (url)" out of the segments
  assert.deepEqual(findClaim(["See the ", "leave policy", " for details "], "See the [leave policy](https://exfil.example/p) for details."),
    { start: [0, 0], end: [2, 12], next: 27 });
});

test("full-width citations 【n】 and ［n］ are links and leave claims, as on the server", () => {
  assert.deepEqual(citationParts("年假20天【1】，病假［2］，另见【3】。", 2), [
    { text: "年假20天" }, { cite: 1 }, { text: "，病假" }, { cite: 2 }, { text: "，另见【3】。" },
  ]);
  assert.deepEqual(parseInline("年假**20**天【1】", 1), [
    { t: "text", v: "年假" }, { t: "strong", c: [{ t: "text", v: "20" }] }, { t: "text", v: "天" }, { t: "cite", n: 1 },
  ]);
  assert.equal(claimNeedle("全职员工每年享有20天带薪年假【1】。"), "全职员工每年享有20天带薪年假");
  assert.equal(claimNeedle("Managers get 40 days ［2］."), "Managersget40days");
  const segments = ["全职员工每年享有20天带薪年假", "。"];
  assert.notEqual(findClaim(segments, "全职员工每年享有20天带薪年假【1】。"), null);
});

import { ocrNoteParts, metadataEntries, isTableChunk, documentCount } from "./kbs.js";
import { cachedLine, injectionReason } from "./chat.js";

test("ocrNoteParts finds the low-confidence pages of an OCR note", () => {
  assert.deepEqual(ocrNoteParts("OCR (eng) on 3 page(s), mean confidence 74%; low confidence on page(s) 2, 3: check the scan"), [
    { text: "OCR (eng) on 3 page(s), mean confidence 74%", low: false },
    { text: "low confidence on page(s) 2, 3: check the scan", low: true, pages: [2, 3] },
  ]);
  assert.deepEqual(ocrNoteParts("OCR (chi_sim) on 1 page(s), mean confidence 91%"), [{ text: "OCR (chi_sim) on 1 page(s), mean confidence 91%", low: false }]);
  assert.deepEqual(ocrNoteParts(""), []);
});

test("metadataEntries shows every value as text, keys in order", () => {
  assert.deepEqual(metadataEntries({ year: 2025, author: "Jane", tags: ["a", "b"], draft: false, nested: { x: 1 } }),
    [["author", "Jane"], ["draft", "false"], ["nested", '{"x":1}'], ["tags", "a, b"], ["year", "2025"]]);
  assert.deepEqual(metadataEntries(null), []);
  assert.deepEqual(metadataEntries(["not", "an", "object"]), []);
});

test("isTableChunk: a table chunk or a section holding a markdown table", () => {
  assert.ok(isTableChunk({ content_type: "table", content: "a" }));
  assert.ok(isTableChunk({ content_type: "general", content: "# T\n\n| a | b |\n| --- | --- |\n| 1 | 2 |" }));
  assert.ok(!isTableChunk({ content_type: "general", content: "a | b without a rule" }));
});

test("a cached answer's line, a flag's reason, a count", () => {
  assert.match(cachedLine({ question: "How many days?", answered_at: "2026-12-01T15:47:39Z" }), /^from cache: first answered Dec 1, 2026, \d{1,2}:\d\d [AP]M for “How many days\?”$/);
  assert.equal(cachedLine({ answered_at: "not a time" }), "from cache: first answered earlier");
  assert.equal(injectionReason("hidden-text"), "it hides characters inside words");
  assert.equal(injectionReason("<b>new</b>"), "flagged as <b>new</b>");
  assert.equal(documentCount(1), "1 document");
  assert.equal(documentCount(0), "0 documents");
});

import { storageMessage, megabytes } from "./uploads.js";

test("an S3 refusal's message and sizes in words", () => {
  assert.equal(storageMessage('<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>'), ": Request has expired");
  assert.equal(storageMessage("not xml"), "");
  assert.equal(storageMessage(undefined), "");
  assert.equal(megabytes(60_000), "60 KB");
  assert.equal(megabytes(12_345_678), "12 MB");
  assert.equal(megabytes(2_500_000), "2.5 MB");
});

import { parseChip, combine, isDate, isFilterRefusal } from "./filters.js";

test("parseChip: each chip form becomes one condition of the server's filter, labelled as typed back", () => {
  assert.deepEqual(parseChip("year=2025"), { filter: { key: "year", eq: 2025 }, label: "year = 2025" });
  assert.deepEqual(parseChip(' year = "2025" '), { filter: { key: "year", eq: "2025" }, label: 'year = "2025"' });
  assert.deepEqual(parseChip("version=1.10"), { filter: { key: "version", eq: "1.10" }, label: "version = 1.10" }, "1.10 stays text, as in front matter");
  assert.deepEqual(parseChip("author=Jane Roe"), { filter: { key: "author", eq: "Jane Roe" }, label: "author = Jane Roe" });
  assert.deepEqual(parseChip("tags in leave, policy,2024"), { filter: { key: "tags", in: ["leave", "policy", 2024] }, label: "tags in leave, policy, 2024" });
  assert.deepEqual(parseChip("date>=2025-01-01"), { filter: { key: "date", gte: "2025-01-01" }, label: "date >= 2025-01-01" });
  assert.deepEqual(parseChip("year<2025"), { filter: { key: "year", lt: 2025 }, label: "year < 2025" });
  assert.deepEqual(parseChip("year > -1.5").filter, { key: "year", gt: -1.5 });
  assert.deepEqual(parseChip("modified<=2025-03-01T10:00:00Z").filter, { key: "modified", lte: "2025-03-01T10:00:00Z" });
  assert.deepEqual(parseChip("HAS owner"), { filter: { key: "owner", exists: true }, label: "has owner" });
  // a label parses back to the same chip (the chips kept in sessionStorage are their labels)
  for (const t of ["year=2025", 'year="2025"', "version=1.10", "tags in a,b", "date>=2025-01-01", "has owner", "note=x in y"]) {
    const c = parseChip(t);
    assert.deepEqual(parseChip(c.label), c, t);
  }
  assert.deepEqual(parseChip("note=x in y").filter, { key: "note", eq: "x in y" });
});

test("parseChip refuses, with the reason, every chip the server would refuse", () => {
  const refused = {
    "": /type a filter/,
    "year": /not understood/,
    "=2025": /key is missing/,
    "bad key!x=1": /not a key|not understood/,
    "ye ar=1": /not a key|not understood/,
    [`${"k".repeat(65)}=1`]: /not a key: 1-64 characters/,
    "year=": /value is empty/,
    "tags in a,,b": /value is empty in the list/,
    "year>=soon": /neither a number nor a date/,
    "date<2025-02-30": /neither a number nor a date/,
    "year>=\"2025\"": /neither a number nor a date/,
    "year!=2025": /not offered/,
    "has": /not understood/,
    "has two words": /not understood/,
    [`note=${"x".repeat(1025)}`]: /at most 1024 bytes/,
    [`tags in ${Array.from({ length: 101 }, (_, i) => `v${i}`).join(",")}`]: /at most 100 values/,
  };
  for (const [text, why] of Object.entries(refused)) {
    const c = parseChip(text);
    assert.equal(c.filter, undefined, text);
    assert.match(c.error, why, text);
  }
});

test("combine: no chips send no filter, one is itself, more are joined with and", () => {
  assert.equal(combine([]), undefined);
  const a = parseChip("year=2025"), b = parseChip("has owner");
  assert.deepEqual(combine([a]), { key: "year", eq: 2025 });
  assert.deepEqual(combine([a, b]), { and: [{ key: "year", eq: 2025 }, { key: "owner", exists: true }] });
  assert.ok(isDate("2024-02-29") && !isDate("2025-02-29") && !isDate("2025-1-01"));
  assert.ok(isFilterRefusal(400, "filter.gte: x") && isFilterRefusal(404, "no document in the knowledge bases asked passes the filter"));
  assert.ok(!isFilterRefusal(500, "filter") && !isFilterRefusal(400, "question is empty"));
});

import { accessView } from "./kbs.js";
import { whoText } from "./signin.js";

test("accessView: a restricted document gets the lock and its principals as given; an open one says so; an upload none", () => {
  assert.equal(accessView(undefined), null);
  assert.equal(accessView(null), null);
  const r = accessView({ connector: "drive", enforced: true, restricted: true, principals: ["group:hr@acme.example", "<img src=x onerror=alert(1)>"] });
  assert.equal(r.restricted, true);
  assert.equal(r.text, "Restricted at the source (connector drive): readable by");
  assert.deepEqual(r.principals, ["group:hr@acme.example", "<img src=x onerror=alert(1)>"]);
  assert.match(accessView({ connector: "drive", enforced: true, restricted: true, principals: [] }).text, /not known yet/);
  const open = accessView({ connector: "drive", enforced: true, restricted: false, principals: ["anyone"] });
  assert.equal(open.restricted, false);
  assert.equal(open.text, "Open to every reader of the knowledge base (connector drive); readable at the source by");
  assert.match(accessView({ connector: "drive", enforced: false, restricted: false, principals: ["user:a@b.example"] }).text, /does not enforce/);
  assert.equal(accessView({ connector: "site", enforced: true, restricted: false, principals: [] }).text, "Open to every reader of the knowledge base (connector site)");
});

test("whoText lists the token's groups after the user; none without groups", () => {
  assert.equal(whoText({ user: "u1", email: "a@b.example", tenant: "t1", role: "member" }), "Signed in as a@b.example (t1, member)");
  assert.equal(whoText({ user: "u1", tenant: "t1", groups: ["hr", "finance"] }), "Signed in as u1 (t1) · groups: hr, finance");
});
