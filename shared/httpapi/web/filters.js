// Metadata filter chips: the user types `key=value`, `key in a,b`, `key>=v` (also >, <, <=) or
// `has key`; each is parsed here into one condition of rag.MetaFilter's JSON form (docs/metadata-filters.md),
// refused with its reason when the server would refuse it, and shown as removable text. The active chips
// are combined with "and" into the "filter" of /api/chat and /api/search; none sends no filter. They
// persist in the tab (sessionStorage) until removed or cleared. The chip row appears by the question box
// and in the retrieval test, both showing the same chips. The input suggests the chosen knowledge base's
// metadata keys, then a key's values (GET /api/kbs/{kb}/metadata), as a datalist: values come from
// documents (untrusted text), so they are only ever set as an option's value and text, never as HTML.
// An inferred filter (the server's inferred_filter event) gets its line in the answer's timeline.

import { request } from "./api.js";
import { $, el, button, state } from "./dom.js";

export const CHIPS_KEY = "docmind.filterChips";

// the limits rag.ParseMetaFilter enforces (shared/rag/metadata.go), checked here so that a chip the
// server would refuse is never sent
const KEY_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_VALUE_BYTES = 1024;
const MAX_IN = 100;
const MAX_CHIPS = 100;
const DATE_RE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))?$/;
const RANGE_OPS = { ">=": "gte", ">": "gt", "<=": "lte", "<": "lt" };

// value reads one typed value: "quoted" is always text; a number that reads back as typed is a number
// (as front matter does: `2025` is a number, `1.10` stays text); anything else is text.
export function value(raw) {
  let s = raw.trim();
  if (s.length >= 2 && ((s[0] === '"' && s.endsWith('"')) || (s[0] === "'" && s.endsWith("'")))) return { v: s.slice(1, -1), quoted: true };
  const n = Number(s);
  if (s !== "" && Number.isFinite(n) && String(n) === s) return { v: n, quoted: false };
  return { v: s, quoted: false };
}

// isDate is what the server takes as a date bound: YYYY-MM-DD or RFC 3339, and a real calendar day.
export function isDate(s) {
  if (typeof s !== "string" || !DATE_RE.test(s)) return false;
  const [y, m, d] = s.slice(0, 10).split("-").map(Number);
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

function checkValue(v) {
  if (v === "") return "the value is empty";
  if (typeof v === "string" && new TextEncoder().encode(v).length > MAX_VALUE_BYTES) return `a value is at most ${MAX_VALUE_BYTES} bytes`;
  return "";
}

function checkKey(k) {
  if (!k) return "the key is missing";
  if (!KEY_RE.test(k)) return `“${k.slice(0, 40)}” is not a key: 1-64 characters of A-Z a-z 0-9 _ . -`;
  return "";
}

// parseChip turns the typed text into {filter, label} or {error}: the reason it is refused.
export function parseChip(text) {
  const s = String(text || "").trim();
  if (!s) return { error: "type a filter such as year=2025, tags in a,b, date>=2025-01-01 or has owner" };
  let m = /^has\s+(\S+)$/i.exec(s);
  if (m) {
    const bad = checkKey(m[1]);
    return bad ? { error: bad } : { filter: { key: m[1], exists: true }, label: `has ${m[1]}` };
  }
  m = /^([^\s=<>!]+)\s+in\s+(.*)$/i.exec(s);
  if (m) {
    const bad = checkKey(m[1]);
    if (bad) return { error: bad };
    const items = m[2].split(",").map(value);
    if (items.length > MAX_IN) return { error: `“in” takes at most ${MAX_IN} values` };
    for (const it of items) {
      const why = checkValue(it.v);
      if (why) return { error: `${why} in the list (write key in a,b)` };
    }
    const vs = items.map(it => it.v);
    return { filter: { key: m[1], in: vs }, label: `${m[1]} in ${items.map(show).join(", ")}` };
  }
  m = /^([^\s=<>!]*)\s*(>=|<=|>|<|!=|==|=)\s*(.*)$/.exec(s);
  if (!m) return { error: "not understood: write key=value, key in a,b, key>=value, key<value or has key" };
  const [, key, op, rest] = m;
  const bad = checkKey(key);
  if (bad) return { error: bad };
  if (op === "!=") return { error: "“!=” is not offered: use the other values with “in”" };
  const it = value(rest);
  const why = checkValue(it.v);
  if (why) return { error: why };
  if (op === "=" || op === "==") return { filter: { key, eq: it.v }, label: `${key} = ${show(it)}` };
  // a range: numbers against numbers, dates against dates
  if (typeof it.v !== "number" && !isDate(it.v)) return { error: `“${String(it.v).slice(0, 40)}” is neither a number nor a date (YYYY-MM-DD) for ${op}` };
  return { filter: { key, [RANGE_OPS[op]]: it.v }, label: `${key} ${op} ${it.v}` };
}

// show writes a value as the user would type it back: text that would read as a number is quoted.
const show = (it) => (typeof it.v === "string" && (it.quoted || value(it.v).v !== it.v) ? `"${it.v}"` : String(it.v));

// combine is the request's filter for the chips: none -> undefined (no "filter" field), one -> itself,
// more -> {"and": [...]}.
export function combine(chips) {
  const fs = (chips || []).map(c => c.filter);
  if (!fs.length) return undefined;
  return fs.length === 1 ? fs[0] : { and: fs };
}

// ---- the chips of this tab, and every row that shows them

function load() {
  try {
    const list = JSON.parse(sessionStorage.getItem(CHIPS_KEY) || "[]");
    // kept chips are parsed again from their label: nothing stored is sent unchecked
    return Array.isArray(list) ? list.map(l => ({ label: l, ...parseChip(l) })).filter(c => c.filter) : [];
  } catch {
    return [];
  }
}

let chips = null;
const rows = [];

export function activeChips() {
  if (chips === null) chips = typeof sessionStorage === "undefined" ? [] : load();
  return chips;
}

// activeFilter is the filter to send with a request (undefined: send none).
export const activeFilter = () => combine(activeChips());

function save() {
  sessionStorage.setItem(CHIPS_KEY, JSON.stringify(chips.map(c => c.label)));
  for (const r of rows) render(r);
}

export function addChip(text) {
  const c = parseChip(text);
  if (c.error) return c.error;
  activeChips();
  if (chips.length >= MAX_CHIPS) return `at most ${MAX_CHIPS} filters`;
  if (!chips.some(x => x.label === c.label)) chips.push(c);
  save();
  return "";
}

export function clearChips() {
  chips = [];
  save();
}

// mountFilterRow builds a chip row into container: the chips, an input (Enter adds), Add, Clear and a
// message line for a refused chip or the server's refusal of the filter (showFilterError).
export function mountFilterRow(container, name) {
  const row = { name, list: el("ul", "chips"), msg: el("p", "error filter-msg") };
  row.msg.setAttribute("role", "alert");
  const input = el("input", "filter-input");
  const list = el("datalist", "");
  list.id = `filter-suggestions-${name}`;
  input.setAttribute("list", list.id);
  input.type = "text";
  input.autocomplete = "off";
  input.maxLength = 2000;
  input.placeholder = "Filter: year=2025, tags in a,b, date>=2025-01-01, has owner";
  input.setAttribute("aria-label", "Add a metadata filter");
  const add = () => {
    const why = addChip(input.value);
    row.msg.textContent = why ? `Filter refused: ${why}.` : "";
    if (!why) input.value = "";
  };
  input.onkeydown = (e) => { if (e.key === "Enter" && !e.isComposing) { e.preventDefault(); add(); } };
  const suggest = async () => fillSuggestions(list, suggestions(input.value, await kbFacets()));
  input.addEventListener("focus", suggest);
  input.addEventListener("input", suggest);
  const clear = button("Clear", () => { clearChips(); row.msg.textContent = ""; }, "link filter-clear", "Clear all filters");
  const bar = el("div", "filterbar");
  bar.append(el("span", "filter-label", "Filters"), row.list, input, list, button("Add", add, "filter-add", "Add the filter"), clear);
  container.textContent = "";
  container.append(bar, row.msg);
  row.clear = clear;
  row.input = input;
  rows.push(row);
  render(row);
  return row;
}

function render(row) {
  row.list.textContent = "";
  for (const c of activeChips()) {
    const li = el("li", "chip");
    li.append(el("span", "chip-text", c.label));
    li.append(button("×", () => { chips = chips.filter(x => x !== c); row.msg.textContent = ""; save(); }, "chip-x", `Remove the filter ${c.label}`));
    row.list.append(li);
  }
  row.clear.hidden = activeChips().length === 0;
}

// showFilterError puts the server's refusal of the filter next to the named row's chips ("" clears it).
export function showFilterError(name, message) {
  for (const r of rows) if (r.name === name) r.msg.textContent = message ? `Filter refused by the server: ${message}` : "";
}

// isFilterRefusal tells a refusal of the filter (400 naming the filter, 404 "passes the filter") from
// other failures, for a request that carried one.
export const isFilterRefusal = (status, message) => (status === 400 || status === 404) && /filter/i.test(String(message || ""));

export function mountFilters() {
  if ($("filters")) mountFilterRow($("filters"), "chat");
  if ($("search-filters")) mountFilterRow($("search-filters"), "search");
}

// ---- suggestions: the chosen knowledge base's keys, then a key's values

const MAX_SUGGESTIONS = 100;
const FACETS_TTL_MS = 30_000;
const MAX_KBS_SUGGESTED = 10; // "All knowledge bases": the first ten are asked
const facetCache = new Map(); // knowledge base name -> { at, keys }

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// chipValue writes a suggested value as a chip reads it back: text that would read as a number, or
// that has quotes at its ends, is quoted (with the other quote when it holds one).
export function chipValue(v) {
  if (typeof v !== "string") return String(v);
  const bare = value(v);
  if (!bare.quoted && bare.v === v && v.trim() === v) return v;
  return v.includes('"') ? `'${v}'` : `"${v}"`;
}

// mergeFacets joins the keys of several knowledge bases (GET /api/kbs/{kb}/metadata's "keys"):
// documents and value counts add up, a type the knowledge bases disagree on is "mixed".
export function mergeFacets(lists) {
  const byKey = new Map();
  for (const keys of lists) {
    for (const f of keys || []) {
      if (!f || typeof f.key !== "string") continue;
      const m = byKey.get(f.key) || { key: f.key, type: f.type, documents: 0, values: new Map(), min: f.min, max: f.max };
      if (m.type !== f.type) m.type = "mixed";
      m.documents += f.documents || 0;
      for (const v of f.values || []) {
        const k = JSON.stringify(v.value);
        m.values.set(k, { value: v.value, documents: (m.values.get(k)?.documents || 0) + (v.documents || 0) });
      }
      if (f.min !== undefined && (m.min === undefined || f.min < m.min)) m.min = f.min;
      if (f.max !== undefined && (m.max === undefined || f.max > m.max)) m.max = f.max;
      byKey.set(f.key, m);
    }
  }
  return [...byKey.values()]
    .map(m => ({ ...m, values: [...m.values.values()].sort((a, b) => b.documents - a.documents) }))
    .sort((a, b) => b.documents - a.documents || (a.key < b.key ? -1 : 1));
}

// suggestions lists what to offer for the typed text: before an operator, the keys (key=, and has key);
// after "key=" (or "key in"), that key's values, most documents first; after a range operator on a
// number or date key, its smallest and largest value. Each is {value, label}: the text to put in the
// input, and what to show beside it.
export function suggestions(text, facets) {
  const s = String(text || "").trimStart();
  const out = [];
  const m = /^([^\s=<>!]+)\s*(>=|<=|>|<|==|=|\s+in\s+)/i.exec(s);
  if (m) {
    const f = (facets || []).find(x => x.key === m[1]);
    if (!f) return out;
    const op = m[2].trim().toLowerCase();
    if (op === "=" || op === "==" || op === "in") {
      for (const v of f.values || []) out.push({ value: `${f.key}${op === "in" ? " in " : "="}${chipValue(v.value)}`, label: plural(v.documents, "document") });
    } else if ((f.type === "number" || f.type === "date") && f.min !== undefined) {
      out.push({ value: `${f.key}${op}${f.min}`, label: `smallest: ${f.min}` }, { value: `${f.key}${op}${f.max}`, label: `largest: ${f.max}` });
    }
    return out.slice(0, MAX_SUGGESTIONS);
  }
  for (const f of facets || []) {
    const typed = s.toLowerCase();
    if (typed && !f.key.toLowerCase().startsWith(typed) && !`has ${f.key}`.startsWith(typed)) continue;
    const range = f.type === "number" || f.type === "date";
    out.push({ value: `${f.key}${range ? ">=" : "="}`, label: `${f.type}, ${plural(f.documents, "document")}` });
    out.push({ value: `has ${f.key}`, label: `documents with ${f.key}` });
  }
  return out.slice(0, MAX_SUGGESTIONS);
}

// fillSuggestions replaces a datalist's options: value and text set as properties, never parsed as HTML.
export function fillSuggestions(list, items) {
  list.textContent = "";
  for (const it of items) {
    const o = document.createElement("option");
    o.value = it.value;
    o.label = it.label;
    list.append(o);
  }
}

// kbFacets is the metadata keys of the knowledge base chosen in #kb (or of the first ten the caller may
// read, for all), kept for 30 s; none when the server keeps no metadata or cannot be reached.
async function kbFacets() {
  const chosen = $("kb") ? $("kb").value : "";
  const names = chosen ? [chosen] : (state.kbs || []).slice(0, MAX_KBS_SUGGESTED).map(k => k.name);
  const lists = await Promise.all(names.map((n) => {
    const hit = facetCache.get(n);
    if (hit && Date.now() - hit.at < FACETS_TTL_MS) return hit.keys;
    // one request per knowledge base at a time: focus and the first keystroke share it
    const keys = request(`/api/kbs/${encodeURIComponent(n)}/metadata`)
      .then(async (r) => (r.ok ? ((await r.json()).keys || []) : []))
      .catch(() => []);
    facetCache.set(n, { at: Date.now(), keys });
    return keys;
  }));
  return mergeFacets(lists);
}

// inferredCond writes one matched value: "department = HR", or a date range the question named from its
// bounds ("date: 2025-01-01 – 2026-01-01" for "in 2025", "date: from 2024-03-01", "date: before
// 2023-01-01"); the end is exclusive, as the filter's lt.
export function inferredCond(m) {
  const day = (t) => (/^\d{4}-\d{2}-\d{2}T00:00:00(\.0+)?(Z|[+-]00:00)$/.test(t) ? t.slice(0, 10) : t);
  const gte = typeof m.gte === "string" && m.gte ? day(m.gte) : "";
  const lt = typeof m.lt === "string" && m.lt ? day(m.lt) : "";
  if (gte && lt) return `${m.key}: ${gte} – ${lt}`;
  if (gte) return `${m.key}: from ${gte}`;
  if (lt) return `${m.key}: before ${lt}`;
  return `${m.key} = ${chipValue(m.value)}`;
}

// inferredLine describes an inferred_filter event for the answer's timeline (null for other events):
// the filter the server read from the question and why, or that it searched without it.
export function inferredLine(name, d) {
  if (name !== "inferred_filter" || !d) return null;
  const conds = (d.matched || []).map(inferredCond).join(", ");
  if (d.fallback) return `inferred filter ${conds} dropped: ${d.detail || "nothing relevant passed it"}`;
  return `filter inferred from the question: ${conds} (${plural(d.documents || 0, "document")})`;
}
