// node --test shared/httpapi/web/filters_test.mjs (run by .ci/run): the chip input's suggestions and the
// inferred filter's timeline line, pure functions of filters.js.
import { test } from "node:test";
import assert from "node:assert/strict";
import { suggestions, mergeFacets, chipValue, inferredLine, inferredCond, parseChip } from "./filters.js";

const facets = mergeFacets([
  [
    { key: "department", type: "string", documents: 3, values: [{ value: "HR", documents: 2 }, { value: "Finance", documents: 1 }] },
    { key: "year", type: "number", documents: 2, values: [{ value: 2025, documents: 1 }, { value: 2024, documents: 1 }], min: 2024, max: 2025 },
  ],
  [
    { key: "department", type: "string", documents: 1, values: [{ value: "Finance", documents: 1 }] },
    { key: "code", type: "string", documents: 1, values: [{ value: "2025", documents: 1 }, { value: "<img src=x onerror=alert(1)>", documents: 1 }] },
  ],
]);

test("mergeFacets adds up the knowledge bases' keys and values, most documents first", () => {
  assert.deepEqual(facets.map(f => `${f.key}:${f.documents}`), ["department:4", "year:2", "code:1"]);
  assert.deepEqual(facets[0].values, [{ value: "HR", documents: 2 }, { value: "Finance", documents: 2 }]);
  assert.equal(mergeFacets([[{ key: "k", type: "string", documents: 1 }], [{ key: "k", type: "number", documents: 1 }]])[0].type, "mixed");
});

test("suggestions offer keys first, then the typed key's values, each a chip the parser takes", () => {
  const keys = suggestions("", facets).map(s => s.value);
  assert.deepEqual(keys, ["department=", "has department", "year>=", "has year", "code=", "has code"]);
  assert.deepEqual(suggestions("dep", facets).map(s => s.value), ["department=", "has department"]);
  const values = suggestions("department=", facets);
  assert.deepEqual(values, [{ value: "department=HR", label: "2 documents" }, { value: "department=Finance", label: "2 documents" }]);
  assert.deepEqual(suggestions("department in ", facets).map(s => s.value), ["department in HR", "department in Finance"]);
  assert.deepEqual(suggestions("year>=", facets).map(s => s.value), ["year>=2024", "year>=2025"]);
  assert.deepEqual(suggestions("nope=", facets), []);
  // a text value that reads as a number is quoted, so that the chip filters on the text
  const code = suggestions("code=", facets).map(s => s.value);
  assert.deepEqual(code, ['code="2025"', "code=<img src=x onerror=alert(1)>"]);
  for (const s of [...values, ...suggestions("code=", facets), ...suggestions("year>=", facets)]) {
    assert.ok(parseChip(s.value).filter, `${s.value} is a chip the parser takes`);
  }
  assert.deepEqual(parseChip(code[0]).filter, { key: "code", eq: "2025" });
  assert.deepEqual(parseChip("year=2025").filter, { key: "year", eq: 2025 });
});

test("chipValue quotes what would not read back as the same text", () => {
  assert.equal(chipValue("HR"), "HR");
  assert.equal(chipValue(2025), "2025");
  assert.equal(chipValue("2025"), '"2025"');
  assert.equal(chipValue(' padded'), '" padded"');
  assert.equal(chipValue('say "hi"'), 'say "hi"');
  assert.equal(chipValue('"quoted"'), `'"quoted"'`);
});

test("inferredLine says which filter was inferred and when it was dropped", () => {
  const d = { filter: { key: "department", eq: "HR" }, matched: [{ words: "hr", key: "department", value: "HR" }], documents: 3, detail: "…" };
  assert.equal(inferredLine("inferred_filter", d), "filter inferred from the question: department = HR (3 documents)");
  assert.equal(inferredLine("inferred_filter", { ...d, fallback: true, detail: "nothing relevant: searched without the inferred filter" }),
    "inferred filter department = HR dropped: nothing relevant: searched without the inferred filter");
  assert.equal(inferredLine("routing", d), null);
});

test("an inferred date range reads from its bounds, not as an equality on the range's words", () => {
  const d = { matched: [{ words: "in 2025", key: "date", value: "[2025-01-01, 2026-01-01)", by: "rules", gte: "2025-01-01", lt: "2026-01-01" }], documents: 2 };
  assert.equal(inferredLine("inferred_filter", d), "filter inferred from the question: date: 2025-01-01 – 2026-01-01 (2 documents)");
  assert.equal(inferredCond({ key: "modified", value: "[2024-03-01, …)", gte: "2024-03-01T00:00:00Z" }), "modified: from 2024-03-01");
  assert.equal(inferredCond({ key: "created", value: "(…, 2023-01-01)", lt: "2023-01-01" }), "created: before 2023-01-01");
  // a bound with a time of day keeps it; a plain match is unchanged
  assert.equal(inferredCond({ key: "d", gte: "2025-01-01T09:30:00Z", lt: "2025-01-02" }), "d: 2025-01-01T09:30:00Z – 2025-01-02");
  assert.equal(inferredCond({ key: "department", value: "HR" }), "department = HR");
  assert.equal(inferredLine("inferred_filter", { ...d, fallback: true, detail: "nothing relevant" }), "inferred filter date: 2025-01-01 – 2026-01-01 dropped: nothing relevant");
});
