// docmind's web page: plain DOM, no build step, no third-party code. Everything that comes from the
// server, a document or a model is written with textContent or as text nodes built from a small markdown
// parser (never parsed as HTML), and links are kept only for http and https, so no passage, file name or
// answer can inject markup or script (SR-09, SEC-04); a link in an answer is live only to this origin or
// to one of the answer's own sources (liveLink), so a model cannot offer a click to a stranger's site. The functions exported here are pure and tested with
// node (app_test.mjs); the DOM code below them runs only in a browser (test/browser drives it).

// ---------------------------------------------------------------------------------------------------
// Pure functions

// parseSSE turns buffered text into complete events and the unparsed rest.
export function parseSSE(buffer) {
  const events = [];
  let rest = buffer.replace(/\r\n/g, "\n");
  let i;
  while ((i = rest.indexOf("\n\n")) >= 0) {
    const block = rest.slice(0, i);
    rest = rest.slice(i + 2);
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    if (data.length === 0) continue;
    try {
      events.push({ name, data: JSON.parse(data.join("\n")) });
    } catch {
      // a damaged event is skipped, never fatal
    }
  }
  return { events, rest };
}

// citeMarker is a citation marker as the server reads it (shared/answer citeRe): [n], or the full-width
// 【n】 or ［n］ some models write in Chinese. The page must read the same markers, or a claim the server
// checked against source n shows as plain text with no link to it.
const citeMarker = "[\\[【［](\\d{1,3})[\\]】］]";

// citationParts splits an answer into text and citation parts; a marker [n] (or 【n】, ［n］) is a
// citation only when 1 <= n <= sourceCount (an invalid one stays plain text, never a link).
export function citationParts(text, sourceCount) {
  const parts = [];
  const re = new RegExp(citeMarker, "g");
  let last = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    const n = Number(m[1]);
    if (n < 1 || n > sourceCount) continue;
    if (m.index > last) parts.push({ text: text.slice(last, m.index) });
    parts.push({ cite: n });
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push({ text: text.slice(last) });
  return parts;
}

// timelineLine describes one pipeline event for the "thinking" timeline (null: not shown).
export function timelineLine(name, d) {
  switch (name) {
    case "understanding": {
      const u = d.understanding || {};
      return `understood (${u.source}): ${[u.intent, u.complexity, u.specificity].filter(Boolean).join(", ")}` +
        (d.rewritten ? ` → “${u.rewrite}”` : "");
    }
    case "routing": return `path ${d.path}: ${d.detail || d.reason}`;
    case "agent_step": return `search round ${d.round}: ${(d.calls || []).map(c => `${c.tool}(${c.query || ""})`).join(", ")} → ${d.new_evidence} new`;
    case "retrieval": return `retrieved ${d.keyword} keyword and ${d.vector} vector hits → ${d.evidence} passages`;
    case "grader": return `evidence graded ${d.tier}: ${d.reason}`;
    case "rerank": return d.reranker_scored ? "reranked by the model" : "ranked without a rerank model";
    case "start": return `answering from ${(d.sources || []).length} source${(d.sources || []).length === 1 ? "" : "s"}`;
    default: return null;
  }
}

// safeHref returns the URL when it is an absolute http or https URL, else null: javascript:, data:,
// relative and malformed links are never made clickable.
export function safeHref(url) {
  let u;
  try { u = new URL(String(url).trim()); } catch { return null; }
  return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
}

// parseInline parses one line of markdown into inline nodes: {t:"text",v}, {t:"code",v}, {t:"strong",c},
// {t:"em",c}, {t:"link",href,c} (http/https only; any other target leaves the label as text), {t:"cite",n}
// (1 <= n <= sourceCount). An image is reduced to its alt text: the page never loads a remote image that
// a model or a document names (no exfiltration through image URLs).
export function parseInline(s, sourceCount = 0) {
  const out = [];
  const text = (v) => {
    if (!v) return;
    for (const p of citationParts(v, sourceCount)) {
      if (p.cite !== undefined) out.push({ t: "cite", n: p.cite });
      else if (out.length && out[out.length - 1].t === "text") out[out.length - 1].v += p.text;
      else out.push({ t: "text", v: p.text });
    }
  };
  const re = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|!\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)|\[([^\]]+)\]\(([^)\s]*)(?:\s+"[^"]*")?\)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|\*(?=[^\s*])([\s\S]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\w])/g;
  let last = 0;
  let m;
  while ((m = re.exec(s)) !== null) {
    text(s.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1]) out.push({ t: "code", v: m[2] });
    else if (m[3] !== undefined) text(m[3]);
    else if (m[5] !== undefined) {
      const href = safeHref(m[6]);
      if (href) out.push({ t: "link", href, c: parseInline(m[5], sourceCount) });
      else text(m[5]);
    } else if (m[7] !== undefined || m[8] !== undefined) out.push({ t: "strong", c: parseInline(m[7] ?? m[8], sourceCount) });
    else out.push({ t: "em", c: parseInline(m[9] ?? m[10], sourceCount) });
  }
  text(s.slice(last));
  return out;
}

const tableRow = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map(c => c.trim());
const isTableRule = (line) => /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(line);

// parseMarkdown parses the subset of markdown answers use into blocks: {type:"h",level,inl},
// {type:"p",inl}, {type:"ul"|"ol",items:[inl]}, {type:"code",text}, {type:"quote",inl},
// {type:"table",head:[inl],rows:[[inl]]}, {type:"hr"}. Raw HTML is not a construct: it stays text.
export function parseMarkdown(src, sourceCount = 0) {
  const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
  const blocks = [];
  const inl = (s) => parseInline(s, sourceCount);
  let para = [];
  const flush = () => { if (para.length) { blocks.push({ type: "p", inl: inl(para.join("\n")) }); para = []; } };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if ((m = /^\s*(```|~~~)/.exec(line))) {
      flush();
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) body.push(lines[i]);
      blocks.push({ type: "code", text: body.join("\n") });
    } else if (!line.trim()) {
      flush();
    } else if ((m = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      flush();
      blocks.push({ type: "h", level: m[1].length, inl: inl(m[2]) });
    } else if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      blocks.push({ type: "hr" });
    } else if (line.includes("|") && i + 1 < lines.length && isTableRule(lines[i + 1])) {
      flush();
      const head = tableRow(line).map(inl);
      const rows = [];
      for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim(); i++) rows.push(tableRow(lines[i]).map(inl));
      i--;
      blocks.push({ type: "table", head, rows });
    } else if ((m = /^\s*([-*+]|\d{1,3}[.)])\s+(.*)$/.exec(line))) {
      flush();
      const type = /\d/.test(m[1]) ? "ol" : "ul";
      const items = [inl(m[2])];
      for (; i + 1 < lines.length; i++) {
        const n = /^\s*([-*+]|\d{1,3}[.)])\s+(.*)$/.exec(lines[i + 1]);
        if (!n || (/\d/.test(n[1]) ? "ol" : "ul") !== type) break;
        items.push(inl(n[2]));
      }
      blocks.push({ type, items });
    } else if ((m = /^\s*>\s?(.*)$/.exec(line))) {
      flush();
      const q = [m[1]];
      for (; i + 1 < lines.length && /^\s*>/.test(lines[i + 1]); i++) q.push(lines[i + 1].replace(/^\s*>\s?/, ""));
      blocks.push({ type: "quote", inl: inl(q.join("\n")) });
    } else {
      para.push(line);
    }
  }
  flush();
  return blocks;
}

// plainText turns a markdown snippet (a passage of a document) into readable text: heading marks,
// table rules and pipes, emphasis and link syntax removed, whitespace collapsed.
export function plainText(md) {
  const flat = (nodes) => nodes.map(n => n.t === "text" || n.t === "code" ? n.v : n.t === "cite" ? `[${n.n}]` : flat(n.c)).join("");
  const out = [];
  for (const b of parseMarkdown(md)) {
    if (b.type === "p" || b.type === "h" || b.type === "quote") out.push(flat(b.inl));
    else if (b.type === "ul" || b.type === "ol") out.push(b.items.map(flat).join("; "));
    else if (b.type === "code") out.push(b.text);
    else if (b.type === "table") out.push([b.head, ...b.rows].map(r => r.map(flat).join(" · ")).join("; "));
  }
  // Snippets often arrive flattened to one line, where heading marks and table pipes are no longer at a
  // line start: remove them where they stand.
  return out.join(" ")
    .replace(/(^|\s)#{1,6}(?=\s)/g, "$1")
    .replace(/\|?(\s*:?-{3,}:?\s*\|)+/g, " ")
    .replace(/\s*\|\s*\|\s*/g, "; ")
    .replace(/^\s*\|\s*|\s*\|\s*$/g, "")
    .replace(/\s*\|\s*/g, " · ")
    .replace(/\s+/g, " ").trim();
}

// dayLabel names the day of an ISO time relative to now: "Today", "Yesterday", a weekday within the
// last week, else the date (YYYY-MM-DD), in the viewer's time zone.
export function dayLabel(iso, now = new Date()) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "Earlier";
  const start = (x) => new Date(x.getFullYear(), x.getMonth(), x.getDate()).getTime();
  const days = Math.round((start(now) - start(d)) / 86400000);
  if (days <= 0) return "Today";
  if (days === 1) return "Yesterday";
  if (days < 7) return d.toLocaleDateString("en", { weekday: "long" });
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
}

// groupConversations drops repeated ids (keeping the first, the most recent), keeps those whose title
// contains the filter (case-insensitive), and groups them by dayLabel of updated_at, in order.
export function groupConversations(list, filter = "", now = new Date()) {
  const seen = new Set();
  const f = filter.trim().toLowerCase();
  const groups = [];
  for (const c of list) {
    if (seen.has(c.id)) continue;
    seen.add(c.id);
    if (f && !(c.title || "").toLowerCase().includes(f)) continue;
    const label = dayLabel(c.updated_at || c.created_at, now);
    if (!groups.length || groups[groups.length - 1].label !== label) groups.push({ label, items: [] });
    groups[groups.length - 1].items.push(c);
  }
  return groups;
}

// confidenceReason explains a confidence in words from its parts.
export function confidenceReason(c) {
  if (!c) return "";
  const parts = [];
  if (c.citation_coverage !== undefined) parts.push(`${Math.round(c.citation_coverage * 100)}% of sentences cited`);
  if (c.retrieval_signal !== undefined) parts.push(`retrieval signal ${Number(c.retrieval_signal).toFixed(2)}`);
  if (c.invalid_citations) parts.push(`${c.invalid_citations} invalid citation${c.invalid_citations === 1 ? "" : "s"}`);
  return parts.join(", ");
}

// STAGE_ORDER is the order stages run in: ingestion's (extract, with the waits it includes, then chunk,
// embed, index), retrieval's and the answer's. The server's stage_ms is a JSON object from a Go map, so
// its keys arrive sorted by name, not in the order they ran.
const STAGE_ORDER = ["extract", "extract_wait", "pdf_engine_start", "chunk", "embed", "index",
  "cache", "understanding", "memory", "hyde", "retrieval", "fusion", "rerank", "filter", "grade", "web", "compress",
  "summary", "generation", "total"];

// stageSummary formats stage timings ({"extract": 12, ...}) in pipeline order, stages it does not know
// last in the order given: "extract 12 ms · chunk 3 ms".
export function stageSummary(ms) {
  if (!ms || typeof ms !== "object") return "";
  const rank = (k) => { const i = STAGE_ORDER.indexOf(k); return i < 0 ? STAGE_ORDER.length : i; };
  return Object.entries(ms).filter(([, v]) => typeof v === "number")
    .map((e, i) => [e, i]).sort(([[a], i], [[b], j]) => rank(a) - rank(b) || i - j)
    .map(([[k, v]]) => `${k} ${v} ms`).join(" · ");
}

// claimSkip says a character is left out when a claim is looked for in the rendered answer: whitespace
// (the answer's text is split around citation buttons and line breaks), markdown's emphasis and code
// marks (the claim's sentence is markdown, the rendered answer is not) and the "·" plainText puts between
// table cells (a rendered table has none), and "|" (a table row's, or one in prose, which the rendered
// text keeps while claimNeedle drops it).
const claimSkip = (ch) => /\s|[*_`·|]/.test(ch);

// claimNeedle reduces a claim's sentence as the server states it (markdown, its [n] markers removed,
// with or without a space left before the final punctuation) to the characters to look for: its text
// without whitespace, emphasis marks and trailing punctuation. A cited table row ("| Managers | 45 |")
// loses its pipes first: its cells are separate text in the rendered table.
export function claimNeedle(sentence) {
  const s = plainText(String(sentence || "").replace(new RegExp("\\s*" + citeMarker, "g"), "").replace(/\|/g, " "));
  return [...s].filter(ch => !claimSkip(ch)).join("").replace(/[.,;:!?。，；：！？、…]+$/u, "");
}

// findClaim finds a claim's sentence in the answer's text segments (its text nodes in order, citation
// buttons left out), ignoring whitespace and trailing punctuation, from the after-th character looked
// at (the previous claim's next: claims come in the answer's order, and an earlier uncited sentence with
// the same text is not this one). It returns where the match starts and ends as [segment, offset] pairs
// (the end exclusive) and where the next claim's search starts, or null when it is not there or too
// short to mean anything.
export function findClaim(segments, sentence, after = 0) {
  const needle = claimNeedle(sentence);
  if ([...needle].length < 4) return null;
  let hay = "";
  const at = [];
  segments.forEach((seg, i) => {
    for (let j = 0; j < seg.length; j++) {
      if (claimSkip(seg[j])) continue;
      hay += seg[j];
      at.push([i, j]);
    }
  });
  const k = hay.indexOf(needle, after);
  if (k < 0) return null;
  const [ei, ej] = at[k + needle.length - 1];
  return { start: at[k], end: [ei, ej + 1], next: k + needle.length };
}

// liveLink returns the URL a markdown link in an answer may open, or null when it is to be shown as
// text: only http(s) URLs of this page's origin or of one of the answer's sources (web results) are
// live. Any other URL a model writes could carry what it read to a stranger's site (SEC-04).
export function liveLink(href, sources = [], origin = "") {
  const u = safeHref(href);
  if (!u) return null;
  if (origin && new URL(u).origin === origin) return u;
  return (sources || []).some(s => s && s.url && safeHref(s.url) === u) ? u : null;
}

// chunkTree orders a document's chunks as parents each followed by their children (by index); children
// whose parent is missing come last, so that every chunk is shown once.
export function chunkTree(chunks) {
  const byIndex = (a, b) => (a.chunk_index ?? 0) - (b.chunk_index ?? 0);
  const ids = new Set(chunks.map(c => c.id));
  const kids = new Map();
  const roots = [];
  const orphans = [];
  for (const c of [...chunks].sort(byIndex)) {
    if (c.parent_id && ids.has(c.parent_id)) {
      if (!kids.has(c.parent_id)) kids.set(c.parent_id, []);
      kids.get(c.parent_id).push(c);
    } else if (c.parent_id) orphans.push(c);
    else roots.push(c);
  }
  const out = [];
  for (const r of roots) {
    out.push({ chunk: r, depth: 0 });
    for (const k of kids.get(r.id) || []) out.push({ chunk: k, depth: 1 });
  }
  for (const o of orphans) out.push({ chunk: o, depth: 1 });
  return out;
}

// isBusy says a document is still being ingested (the page keeps refreshing its status).
export const isBusy = (d) => d.status === "pending" || d.status === "processing";

// ---------------------------------------------------------------------------------------------------
// The page

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
};
const button = (text, onclick, cls = "", label = "") => {
  const b = el("button", cls, text);
  b.type = "button";
  if (label) b.setAttribute("aria-label", label);
  b.onclick = onclick;
  return b;
};

const state = {
  conversation: "",
  conversations: [],
  kbs: [],
  turnCount: 0,
  controller: null, // the AbortController of the streaming answer
  convEpoch: 0, // counts New and Open: an answer stopped before either does not adopt its conversation
  docsTimer: 0,
  me: null,
  ingest: true, // whether this server takes uploads, deletes and reprocessing (GET /api/kbs says)
  docNames: new Map(), // document id -> file name, for the retrieval test's keyword and vector hits
};

// ---- requests: same origin only, the API key (when signed in) on every one

const KEY = "docmind.apiKey";

class OfflineError extends Error {
  constructor() {
    super("Cannot reach the docmind server. Check that it is running and your connection, then retry.");
    this.offline = true;
  }
}

// LostError is a stream that broke after the server started answering (the server stopped, the network
// dropped): the browser says only "network error", so the page names what happened.
class LostError extends Error {
  constructor() {
    super("The connection to the docmind server was lost in the middle of the answer; what arrived is kept. Check that the server is running, then retry.");
    this.offline = true;
  }
}

// readChunk reads the next part of a streamed response; a failure other than the user's stop is a lost
// connection.
async function readChunk(reader) {
  try {
    return await reader.read();
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new LostError();
  }
}

let signingIn = null;

// authHeaders adds the key twice: in Authorization, and in X-Docmind-Authorization for a deployment behind
// CloudFront with origin access control, where CloudFront signs the origin request in Authorization and
// the chat function reads the application's credential from X-Docmind-Authorization (DEPLOY.md).
function authHeaders(extra = {}) {
  const key = sessionStorage.getItem(KEY);
  return key ? { ...extra, Authorization: `Bearer ${key}`, "X-Docmind-Authorization": `Bearer ${key}` } : extra;
}

// bodyHash is the hex SHA-256 of a string body, which CloudFront OAC needs in x-amz-content-sha256 to sign
// a POST to a Lambda function URL; "" where the browser offers no digest (an insecure context) or the
// body is not a string (an upload's form: the query function behind OAC takes no uploads, and its
// GET /api/kbs says so with "ingest": false, which hides the upload controls).
async function bodyHash(body) {
  if (typeof body !== "string" || !globalThis.crypto || !crypto.subtle) return "";
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// request is fetch with the key, a sign-in prompt on 401 (then a retry with the key entered, up to three
// times, so that a mistyped key can be corrected) and an OfflineError when the server cannot be reached.
async function request(path, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    let r;
    try {
      const headers = authHeaders(opts.headers);
      const hash = await bodyHash(opts.body);
      if (hash) headers["x-amz-content-sha256"] = hash;
      r = await fetch(path, { ...opts, headers, credentials: "same-origin" });
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw new OfflineError();
    }
    if (r.status !== 401 || attempt >= 3) return r;
    if (!(await signIn(await errorMessage(r)))) return r;
  }
}

async function errorMessage(r) {
  try { return (await r.json()).error.message; } catch { return r.statusText || `HTTP ${r.status}`; }
}

async function api(path, opts = {}) {
  const r = await request(path, opts);
  if (!r.ok) throw new Error(await errorMessage(r));
  return r.status === 204 ? null : r.json();
}

const postJSON = (path, body) => api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

// signIn asks for an API key (one dialog however many requests were refused at once); it resolves true
// when a key was entered, false when the dialog was dismissed.
function signIn(message) {
  if (signingIn) return signingIn;
  signingIn = new Promise((resolve) => {
    const dlg = $("dlg-key");
    $("key-msg").textContent = sessionStorage.getItem(KEY) ? `The key was refused: ${message}` : "";
    $("key").value = "";
    dlg.returnValue = "";
    dlg.onclose = () => {
      // only "Sign in" keeps the key: Escape or closing the dialog after typing one discards it
      const key = dlg.returnValue === "ok" ? $("key").value.trim() : "";
      $("key").value = "";
      if (key) sessionStorage.setItem(KEY, key);
      signingIn = null;
      resolve(Boolean(key));
      if (key) loadMe();
    };
    dlg.showModal();
  });
  return signingIn;
}

async function loadMe() {
  try {
    state.me = await api("/api/me");
  } catch {
    state.me = null; // an older server without /api/me
  }
  const me = state.me;
  $("who").hidden = !me || me.auth === "none";
  if (me) $("who-name").textContent = `Signed in as ${me.email || me.user} (${me.tenant}${me.role ? `, ${me.role}` : ""})`;
}

function signOut() {
  sessionStorage.removeItem(KEY);
  state.me = null;
  $("who").hidden = true;
  location.reload();
}

// ---- dialogs

function confirmDialog(text, ok = "Delete") {
  return new Promise((resolve) => {
    const dlg = $("dlg-confirm");
    $("confirm-text").textContent = text;
    $("confirm-ok").textContent = ok;
    dlg.returnValue = "";
    dlg.onclose = () => resolve(dlg.returnValue === "ok");
    dlg.showModal();
  });
}

function pickKB() {
  return new Promise((resolve) => {
    const dlg = $("dlg-kb");
    const sel = $("pick-kb");
    sel.textContent = "";
    for (const kb of state.kbs) {
      const o = el("option", "", kb.name);
      o.value = kb.name;
      sel.append(o);
    }
    dlg.returnValue = "";
    dlg.onclose = () => resolve(dlg.returnValue === "ok" ? sel.value : "");
    dlg.showModal();
  });
}

// ---- markdown to DOM (text nodes only)

function renderInline(parent, nodes, turn) {
  for (const n of nodes) {
    switch (n.t) {
      case "text": parent.append(document.createTextNode(n.v)); break;
      case "code": parent.append(el("code", "", n.v)); break;
      case "strong": case "em": { const e = el(n.t); renderInline(e, n.c, turn); parent.append(e); break; }
      case "link": {
        const href = liveLink(n.href, turn && turn.sources, location.origin);
        if (!href) {
          // not a source of this answer: the label and the address, as text; the address in its own
          // element, which answerTextNodes skips by class (a claim states the label only)
          const span = el("span", "offsite");
          renderInline(span, n.c, turn);
          span.append(el("span", "offsite-url", ` (${n.href})`));
          parent.append(span);
          break;
        }
        const a = el("a");
        a.href = href;
        a.rel = "noopener noreferrer nofollow";
        a.target = "_blank";
        renderInline(a, n.c, turn);
        parent.append(a);
        break;
      }
      case "cite": {
        const b = button(`[${n.n}]`, () => showSource(turn, n.n), "cite", `source ${n.n}`);
        parent.append(b);
        break;
      }
    }
  }
}

function renderMarkdown(box, text, sourceCount, turn) {
  box.textContent = "";
  for (const b of parseMarkdown(text, sourceCount)) {
    let e;
    switch (b.type) {
      case "h": e = el(`h${Math.min(6, b.level + 2)}`); renderInline(e, b.inl, turn); break;
      case "p": e = el("p"); renderInline(e, b.inl, turn); break;
      case "quote": e = el("blockquote"); renderInline(e, b.inl, turn); break;
      case "code": e = el("pre"); e.append(el("code", "", b.text)); break;
      case "hr": e = el("hr"); break;
      case "ul": case "ol":
        e = el(b.type);
        for (const item of b.items) { const li = el("li"); renderInline(li, item, turn); e.append(li); }
        break;
      case "table": {
        e = el("table");
        const tr = el("tr");
        for (const c of b.head) { const th = el("th"); renderInline(th, c, turn); tr.append(th); }
        const thead = el("thead");
        thead.append(tr);
        const tbody = el("tbody");
        for (const row of b.rows) {
          const r = el("tr");
          for (const c of row) { const td = el("td"); renderInline(td, c, turn); r.append(td); }
          tbody.append(r);
        }
        e.append(thead, tbody);
        break;
      }
    }
    if (e) box.append(e);
  }
}

// markClaims wraps each unsupported claim's sentence in <mark> where it is found in the answer (across
// the text around citation buttons and emphasis), and lists every unsupported claim with its reason
// below the answer, as text (the server states a claim in markdown). Every claim, supported ones too,
// moves the search on: the claims are the answer's cited sentences in order. Marks only split text
// nodes, so the text findClaim counts in stays the same from one claim to the next.
function markClaims(turn, claims) {
  const all = (claims || []).filter(c => c && c.sentence);
  const bad = all.filter(c => c.supported === false);
  if (!bad.length) return;
  let after = 0;
  for (const c of all) {
    const nodes = answerTextNodes(turn.box);
    const hit = findClaim(nodes.map(n => n.data), c.sentence, after);
    if (!hit) continue;
    after = hit.next;
    if (c.supported !== false) continue;
    const title = c.reason ? `Not supported by the sources: ${c.reason}` : "Not supported by the sources";
    wrapClaim(nodes, hit, title);
  }
  const box = el("div", "claims");
  box.append(el("strong", "", "Not supported by the cited sources:"));
  const ul = el("ul");
  for (const c of bad) {
    const text = plainText(c.sentence);
    ul.append(el("li", "", c.reason ? `“${text}” — ${c.reason}` : `“${text}”`));
  }
  box.append(ul);
  turn.meta.before(box);
}

// answerTextNodes lists an answer's text nodes in order, leaving out the citation buttons' "[n]" and the
// " (url)" the page adds after an outside link's label (a claim states the label only). Both are found
// by class, not position: a mark ending on a link's label splits the link's span, and the copy inside
// the mark ends with the label, which a "last child" test took for the address.
function answerTextNodes(box) {
  const added = (n) => n.parentElement.closest("button.cite, .offsite-url");
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement && added(n) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const out = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) out.push(n);
  return out;
}

// wrapClaim puts the matched text in one <mark> when it lies within one block (a paragraph, list item or
// cell; citation buttons and emphasis inside it move into the mark), else one <mark> per text node, since
// an inline mark cannot hold blocks.
function wrapClaim(nodes, hit, title) {
  const mark = () => { const m = el("mark", "unsupported"); m.title = title; return m; };
  const [si, so] = hit.start, [ei, eo] = hit.end;
  const block = (n) => n.parentElement.closest("p, li, td, th, h3, h4, h5, h6, blockquote, pre");
  if (block(nodes[si]) === block(nodes[ei])) {
    const range = document.createRange();
    range.setStart(nodes[si], so);
    range.setEnd(nodes[ei], eo);
    const m = mark();
    m.append(range.extractContents());
    range.insertNode(m);
    return;
  }
  for (let i = si; i <= ei; i++) {
    const range = document.createRange();
    range.setStart(nodes[i], i === si ? so : 0);
    range.setEnd(nodes[i], i === ei ? eo : nodes[i].data.length);
    if (!range.collapsed) range.surroundContents(mark());
  }
}

// ---- a turn: one question and its answer, built by the same events live and when reopened

function newTurn(question) {
  $("empty")?.remove();
  const n = ++state.turnCount;
  const root = el("article", "turn");
  root.setAttribute("aria-label", `Question ${n}`);
  const timeline = el("details", "timeline");
  timeline.open = true;
  const summary = el("summary", "", "Thinking…");
  const steps = el("ol");
  timeline.append(summary, steps);
  const box = el("div", "a");
  const meta = el("div", "meta");
  root.append(el("div", "q", question), timeline, box, meta);
  $("turns").append(root);
  return { n, root, timeline, summary, steps, box, meta, question, text: "", sources: [], path: "", grade: null, started: performance.now(), done: null, failed: false };
}

let renderQueued = null;

function scheduleRender(turn) {
  if (renderQueued) return;
  renderQueued = requestAnimationFrame(() => {
    renderQueued = null;
    if (turn.done) return; // done rendered the final answer (and its claim marks) already
    renderMarkdown(turn.box, turn.text, turn.sources.length, turn);
    scrollToEnd();
  });
}

function scrollToEnd() {
  const t = $("turns");
  if (t.scrollHeight - t.scrollTop - t.clientHeight < 200) t.scrollTop = t.scrollHeight;
}

function handleEvent(turn, name, data) {
  const line = timelineLine(name, data);
  if (line) turn.steps.append(el("li", "", line));
  switch (name) {
    case "routing": turn.path = data.path; break;
    case "grader": turn.grade = data; break;
    case "start": turn.sources = data.sources || []; turn.box.classList.add("streaming"); break;
    case "token": turn.text += data.text; scheduleRender(turn); break;
    case "confidence_warning": turn.root.insertBefore(el("div", "warn", data.message), turn.meta); break;
    case "error": failTurn(turn, data.message || "The answer failed.", false); break;
    case "done": finishTurn(turn, data); break;
  }
}

function finishTurn(turn, d) {
  turn.done = d;
  if (renderQueued) { cancelAnimationFrame(renderQueued); renderQueued = null; }
  turn.box.classList.remove("streaming");
  turn.sources = d.sources || [];
  renderMarkdown(turn.box, d.answer ?? turn.text, turn.sources.length, turn);
  const steps = turn.steps.children.length;
  const secs = d.stage_ms && d.stage_ms.total ? ` · ${(d.stage_ms.total / 1000).toFixed(1)} s` : "";
  // a reopened stopped answer reads as it did when it was stopped
  turn.summary.textContent = d.stopped ? "Stopped" : `${steps} step${steps === 1 ? "" : "s"} · path ${d.short_circuit || d.path || turn.path || "?"}${secs}`;
  turn.timeline.open = false;
  const band = d.confidence && d.confidence.band;
  // a stopped answer (stored by the server with what was sent before the stop) has no confidence
  const label = d.stopped ? "stopped" : band ? `${band} confidence ${Number(d.confidence.score).toFixed(2)}` : (d.short_circuit || d.path || "answer");
  const badge = el("span", `badge ${(!d.stopped && band) || "none"}`, label);
  badge.setAttribute("role", "note");
  turn.meta.append(badge);
  const reason = band ? confidenceReason(d.confidence) + (turn.grade && turn.grade.reason ? `; evidence: ${turn.grade.reason}` : "") : "";
  if (reason) turn.meta.append(el("span", "reason", reason));
  if (d.from_cache) turn.meta.append(el("span", "badge none", "from cache"));
  if (d.is_fallback) turn.meta.append(el("span", "badge none", "quoted passages (no model)"));
  if (d.partial && !d.stopped) turn.meta.append(el("span", "badge LOW", "incomplete"));
  if ((d.degraded || []).length) turn.meta.append(el("span", "badge none", `degraded: ${d.degraded.join(", ")}`));
  if (navigator.clipboard && d.answer) {
    const copy = button("Copy", async () => {
      try { await navigator.clipboard.writeText(d.answer); copy.textContent = "Copied"; } catch { copy.textContent = "Copy failed"; }
    }, "link copy", "Copy the answer");
    turn.meta.append(copy);
  }
  markClaims(turn, d.claims);
  renderSources(turn);
  // the streamed text is not announced token by token; its end is
  if (!turn.replayed) announce(`Answer ready${band ? `, ${band} confidence` : ""}, ${turn.sources.length} sources.`);
  if ((d.recommendations || []).length) {
    turn.root.append(el("div", "related", "Related: " + d.recommendations.map(x => x.file_name).join(", ")));
  }
  if (d.conversation_id) state.conversation = d.conversation_id;
}

function renderSources(turn) {
  if (!turn.sources.length) return;
  const det = el("details", "sources");
  det.append(el("summary", "", `${turn.sources.length} source${turn.sources.length === 1 ? "" : "s"}`));
  const ol = el("ol");
  for (const s of turn.sources) {
    const li = el("li");
    li.id = `src-${turn.n}-${s.n}`;
    li.value = s.n;
    li.tabIndex = -1;
    const where = el("span", "where", s.file_name || s.url || "source");
    li.append(where);
    if (s.url && safeHref(s.url)) {
      const a = el("a", "", " (web)");
      a.href = safeHref(s.url);
      a.rel = "noopener noreferrer nofollow";
      a.target = "_blank";
      li.append(a);
    }
    const path = [s.chapter, s.page ? `page ${s.page}` : ""].filter(Boolean).join(" · ");
    if (path) li.append(el("span", "path", ` › ${path}`));
    li.append(el("span", "snippet", plainText(s.snippet || "")));
    ol.append(li);
  }
  det.append(ol);
  turn.sourcesBox = det;
  turn.root.append(det);
}

// showSource opens the turn's sources, scrolls to source n and highlights it (the last one clicked).
function showSource(turn, n) {
  if (!turn.sourcesBox) return;
  turn.sourcesBox.open = true;
  for (const li of document.querySelectorAll(".sources li.highlight")) li.classList.remove("highlight");
  const li = $(`src-${turn.n}-${n}`);
  if (!li) return;
  li.classList.add("highlight");
  li.scrollIntoView({ block: "nearest", behavior: matchMedia("(prefers-reduced-motion: reduce)").matches ? "auto" : "smooth" });
  li.focus({ preventScroll: true });
}

// failTurn shows why the answer failed with a retry that asks the same question again; the question also
// goes back into the box so that nothing typed is lost.
function announce(text) {
  $("announce").textContent = text;
}

function failTurn(turn, message, offline) {
  if (turn.failed) return;
  turn.failed = true;
  if (!turn.replayed) announce(`The answer failed: ${message}`);
  turn.box.classList.remove("streaming");
  // nothing arrived: no empty answer box under a "Stopped" line, only the failure and its retry
  if (!turn.text) turn.box.hidden = true;
  turn.summary.textContent = turn.text ? "Cut off" : "Failed";
  const box = el("div", "failbox");
  box.setAttribute("role", "alert");
  box.append(el("span", "error", message));
  box.append(button("Retry", () => { box.remove(); turn.root.remove(); submitQuestion(turn.question); }));
  turn.root.insertBefore(box, turn.meta);
  if (offline || !$("question").value) $("question").value = turn.question;
}

async function ask(question) {
  const turn = newTurn(question);
  const body = { question };
  if ($("kb").value) body.kbs = [$("kb").value];
  if (state.conversation) body.conversation_id = state.conversation;
  const controller = new AbortController();
  state.controller = controller;
  const epoch = state.convEpoch;
  let started = ""; // the conversation the server stored the question in, named before the answer
  setStreaming(true);
  try {
    const r = await request("/api/chat", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal: controller.signal });
    if (!r.ok) { failTurn(turn, await errorMessage(r), false); return; }
    started = r.headers.get("X-Docmind-Conversation") || "";
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await readChunk(reader);
      if (done) break;
      const parsed = parseSSE(buf + dec.decode(value, { stream: true }));
      buf = parsed.rest;
      for (const { name, data } of parsed.events) handleEvent(turn, name, data);
    }
    if (!turn.done && !turn.failed) failTurn(turn, "The answer was cut off before it finished.", false);
  } catch (err) {
    if (err.name === "AbortError") {
      // everything received is shown (the last frame's render may lag), as the server stores it
      if (renderQueued) { cancelAnimationFrame(renderQueued); renderQueued = null; }
      renderMarkdown(turn.box, turn.text, turn.sources.length, turn);
      turn.box.classList.remove("streaming");
      turn.summary.textContent = "Stopped";
      turn.timeline.open = false;
      turn.meta.append(el("span", "badge none", "stopped"));
    } else {
      failTurn(turn, err.offline ? err.message : String(err.message || err), Boolean(err.offline));
    }
  } finally {
    state.controller = null;
    setStreaming(false);
    // A stopped first answer's conversation (its done, which names it, never came) becomes the open
    // one, so that the next question goes on with it: by the id the response named, never by title
    // (an older conversation may have the same one), and not when New or a reopened conversation has
    // replaced it since (epoch). Stopped before the response came, nothing is adopted.
    if (controller.byUser && !state.conversation && started && state.convEpoch === epoch) state.conversation = started;
    loadConversations();
    loadMemories();
  }
}

function setStreaming(on) {
  $("send").hidden = on;
  $("stop").hidden = !on;
  if (on) $("stop").focus();
  else if (document.activeElement === $("stop") || document.activeElement === document.body) $("question").focus();
}

function submitQuestion(q) {
  if (state.controller) return;
  $("question").value = "";
  ask(q);
}

// ---- conversations

async function loadConversations() {
  const nav = $("conversations");
  try {
    const { conversations } = await api("/api/conversations");
    state.conversations = conversations;
  } catch (err) {
    // unreachable is not the same as a server that keeps no history: say which
    nav.textContent = "";
    nav.append(el("p", "hint", err.offline ? "Cannot reach the docmind server: the conversations come back when it does." : "History is not stored here."));
    return;
  }
  renderConversations();
}

function renderConversations() {
  const nav = $("conversations");
  nav.textContent = "";
  const groups = groupConversations(state.conversations, $("conv-search").value);
  if (!groups.length) nav.append(el("p", "hint", $("conv-search").value ? "No conversation matches." : "No conversations yet."));
  for (const g of groups) {
    nav.append(el("h3", "", g.label));
    const ul = el("ul");
    for (const c of g.items) {
      const li = el("li", c.id === state.conversation ? "current" : "");
      const open = button("", () => openConversation(c.id));
      open.title = c.title || c.id;
      open.append(el("span", "title", c.title || "(untitled)")); // the title is cut short, never the time
      const when = el("time", "", new Date(c.updated_at).toLocaleTimeString("en", { hour: "2-digit", minute: "2-digit" }));
      when.dateTime = c.updated_at;
      open.append(document.createTextNode(" "), when);
      li.append(open, button("✕", () => deleteConversation(c), "del", `Delete conversation ${c.title || c.id}`));
      ul.append(li);
    }
    nav.append(ul);
  }
}

async function deleteConversation(c) {
  if (!(await confirmDialog(`Delete the conversation “${c.title || c.id}”? Its messages are removed for good.`))) return;
  try {
    await api(`/api/conversations/${encodeURIComponent(c.id)}`, { method: "DELETE" });
    if (state.conversation === c.id) newConversation();
  } catch (err) {
    alertStatus(err.message);
  }
  loadConversations();
}

function alertStatus(message) {
  const t = $("turns");
  const box = el("div", "failbox", message);
  box.setAttribute("role", "alert");
  t.append(box);
}

function newConversation() {
  state.controller?.abort();
  state.convEpoch++;
  state.conversation = "";
  $("turns").textContent = "";
  const empty = el("div", "empty");
  empty.id = "empty";
  empty.append(el("h2", "", "Ask about your documents"), el("p", "", "Answers cite their sources; click a number like [1] to see the passage."));
  $("turns").append(empty);
  renderConversations();
  closeMenu();
  showView("chat");
  $("question").focus();
}

// openConversation replays each stored answer's trace (the events as they were streamed, done included)
// through the same handlers as a live answer, so that its timeline, warnings and sources come back.
async function openConversation(id) {
  state.controller?.abort();
  state.convEpoch++;
  let data;
  try {
    data = await api(`/api/conversations/${encodeURIComponent(id)}/messages`);
  } catch (err) {
    alertStatus(err.message);
    return;
  }
  state.conversation = id;
  // the conversation's own scope comes back with it: one knowledge base, or all
  const ids = (data.conversation && data.conversation.kb_ids) || [];
  const kb = ids.length === 1 ? state.kbs.find(k => k.id === ids[0]) : null;
  if (ids.length <= 1 && (kb || !ids.length)) { $("kb").value = kb ? kb.name : ""; renderKBList(); }
  $("turns").textContent = "";
  let question = "";
  for (const m of data.messages) {
    if (m.role === "user") { question = m.content; continue; }
    const turn = newTurn(question);
    turn.replayed = true;
    question = "";
    const trace = Array.isArray(m.trace) ? m.trace : [];
    if (trace.some(e => e.event === "done")) {
      for (const e of trace) if (e.event !== "token") handleEvent(turn, e.event, e.data);
    } else {
      finishTurn(turn, { answer: m.content, sources: m.sources || [], confidence: m.band ? { band: m.band, score: m.confidence } : null, from_cache: m.from_cache });
    }
  }
  if (question) newTurn(question).summary.textContent = "No answer was stored";
  renderConversations();
  closeMenu();
  showView("chat");
}

// ---- memories

async function loadMemories() {
  const ul = $("memories");
  try {
    const { memories } = await api("/api/memories");
    ul.textContent = "";
    if (memories.length === 0) ul.append(el("li", "", "nothing yet"));
    for (const m of memories) {
      const li = el("li");
      li.append(el("span", "", `${m.kind}: ${m.content}`),
        button("forget", async () => { await api(`/api/memories/${encodeURIComponent(m.id)}`, { method: "DELETE" }); loadMemories(); }, "link", `Forget ${m.content}`));
      ul.append(li);
    }
  } catch { ul.textContent = ""; ul.append(el("li", "", "memory is off")); }
}

// ---- knowledge bases

async function loadKBs() {
  const { knowledge_bases, ingest } = await api("/api/kbs");
  state.kbs = knowledge_bases;
  setIngest(ingest !== false); // an older server without the field ingests
  const sel = $("kb");
  const chosen = sel.value;
  for (const o of [...sel.options].slice(1)) o.remove();
  for (const kb of knowledge_bases) {
    const o = el("option", "", kb.name);
    o.value = kb.name;
    sel.append(o);
  }
  sel.value = knowledge_bases.some(k => k.name === chosen) ? chosen : "";
  renderKBList();
  loadDocuments();
}

function renderKBList() {
  const ul = $("kb-list");
  ul.textContent = "";
  const all = { name: "", description: "" };
  for (const kb of [all, ...state.kbs]) {
    const li = el("li", kb.name === $("kb").value ? "current" : "");
    const choose = button(kb.name || "All knowledge bases", () => chooseKB(kb.name));
    choose.setAttribute("aria-pressed", String(kb.name === $("kb").value));
    if (kb.description) choose.title = kb.description;
    li.append(choose);
    if (kb.name && state.ingest) li.append(button("✕", () => deleteKB(kb), "del", `Delete knowledge base ${kb.name}`));
    ul.append(li);
  }
}

// chooseKB scopes the next questions (the open conversation goes on, searching the knowledge base chosen
// now) and the document list.
function chooseKB(name) {
  $("kb").value = name;
  renderKBList();
  loadDocuments();
}

async function createKB(e) {
  e.preventDefault();
  const name = $("kb-name").value.trim();
  if (!name) return;
  try {
    await postJSON("/api/kbs", { name, description: $("kb-desc").value.trim() });
    $("kb-msg").textContent = `Created “${name}”.`;
    $("kb-name").value = $("kb-desc").value = "";
    await loadKBs();
    chooseKB(name);
  } catch (err) {
    $("kb-msg").textContent = err.offline ? err.message : `Not created: ${err.message}`;
  }
}

async function deleteKB(kb) {
  if (!(await confirmDialog(`Delete the knowledge base “${kb.name}” with all its documents? This cannot be undone.`))) return;
  try {
    await api(`/api/kbs/${encodeURIComponent(kb.id || kb.name)}`, { method: "DELETE" });
    $("kb-msg").textContent = `Deleted “${kb.name}”.`;
    if ($("kb").value === kb.name) $("kb").value = "";
    // its uploads' lines (a failure included) speak of a knowledge base that is gone
    for (const li of $("uploads").querySelectorAll("li")) if (li.dataset.kb === kb.name || li.dataset.kb === kb.id) li.remove();
  } catch (err) {
    $("kb-msg").textContent = `Not deleted: ${err.message}`;
  }
  await loadKBs();
}

// ---- documents

const EMPTY_DOCS = "No documents yet: drop files above to add some.";
const EMPTY_DOCS_NO_INGEST = "No documents yet.";
const NO_KBS = "No knowledge bases yet: create one above, then drop files on it.";
const NOTHING_SHARED = "Nothing is shared with you yet: ask the owner of a knowledge base to give you a role on it, or create your own above.";

// emptyDocsMessage is what an empty document list says: with no knowledge base to drop files into, the
// drop hint would send the reader nowhere; a signed-in member sees only what is shared with them.
function emptyDocsMessage() {
  if (state.kbs.length) return state.ingest ? EMPTY_DOCS : EMPTY_DOCS_NO_INGEST;
  const me = state.me;
  return me && me.auth !== "none" && me.role !== "admin" ? NOTHING_SHARED : NO_KBS;
}

// setIngest shows or hides what only a server that ingests can do: the drop zone, document delete and
// reprocess, knowledge base delete. The AWS query function serves this page without them; the
// management API and the drop folder add and remove documents there.
function setIngest(on) {
  state.ingest = on;
  $("drop").hidden = !on;
  $("uploads").hidden = !on;
  $("ingest-off").hidden = on;
}

async function loadDocuments() {
  clearTimeout(state.docsTimer);
  const chosen = $("kb").value;
  $("docs-h").textContent = chosen ? `Documents in ${chosen}` : "Documents in all knowledge bases";
  const kbs = chosen ? state.kbs.filter(k => k.name === chosen) : state.kbs;
  let docs = [];
  try {
    const lists = await Promise.all(kbs.map(kb => api(`/api/kbs/${encodeURIComponent(kb.name)}/documents`).then(r => r.documents.map(d => ({ ...d, kb: kb.name })))));
    docs = lists.flat();
    for (const d of docs) state.docNames.set(d.id, d.file_name);
    // an action's message stays until the next action; only the empty-list hint follows the list
    const empty = emptyDocsMessage();
    if (!docs.length) $("docs-msg").textContent = empty;
    else if ($("docs-msg").textContent === empty) $("docs-msg").textContent = "";
  } catch (err) {
    $("docs-msg").textContent = err.message;
    return;
  }
  renderDocuments(docs, !chosen);
  settleUploads(docs);
  if (docs.some(isBusy)) state.docsTimer = setTimeout(loadDocuments, 1500);
}

function renderDocuments(docs, showKB) {
  const tbody = $("documents").tBodies[0];
  tbody.textContent = "";
  for (const d of docs) {
    const tr = el("tr");
    tr.dataset.doc = d.id;
    const name = el("td");
    name.append(el("span", "", d.file_name));
    if (showKB) name.append(el("span", "sub", d.kb));
    const status = el("td");
    status.append(el("span", `status ${d.status}`, d.status));
    if (d.error) status.append(el("span", "sub error", d.error));
    const stages = stageSummary(d.stage_ms);
    if (stages) status.append(el("span", "sub", stages));
    const actions = el("td");
    actions.append(button("Chunks", () => showChunks(d), "", `Chunks of ${d.file_name}`));
    if (state.ingest) {
      const re = button(d.status === "failed" ? "Retry" : "Reprocess", async () => {
        re.disabled = true;
        re.textContent = "Queued…";
        try {
          await api(`/api/documents/${encodeURIComponent(d.id)}/reprocess`, { method: "POST" });
          $("docs-msg").textContent = `Reprocessing ${d.file_name}…`;
        } catch (err) {
          $("docs-msg").textContent = `Not reprocessed: ${err.message}`;
        }
        loadDocuments();
      }, "", `Reprocess ${d.file_name}`);
      actions.append(re, button("Delete", async () => {
        if (!(await confirmDialog(`Delete “${d.file_name}”?`))) return;
        try { await api(`/api/documents/${encodeURIComponent(d.id)}`, { method: "DELETE" }); } catch (err) { $("docs-msg").textContent = err.message; }
        loadDocuments();
      }, "", `Delete ${d.file_name}`));
    }
    tr.append(name, status, el("td", "num", d.chunk_count), actions);
    tbody.append(tr);
  }
}

async function showChunks(d) {
  const box = $("chunks");
  box.textContent = "";
  let chunks;
  try {
    ({ chunks } = await api(`/api/documents/${encodeURIComponent(d.id)}/chunks`));
  } catch (err) {
    box.append(el("p", "error", err.message));
    return;
  }
  // the count the document table shows (chunk_count: the passages that are searched), then the
  // sections they are expanded to; "3 chunks" beside a table saying 2 read as a mismatch
  const children = chunks.filter(c => c.level === "child").length;
  const sections = chunks.length - children;
  const h = el("h3", "", `${d.file_name}: ${children} chunk${children === 1 ? "" : "s"} in ${sections} section${sections === 1 ? "" : "s"}`);
  h.tabIndex = -1;
  box.append(h, button("Close", () => { box.textContent = ""; }, "link"));
  for (const { chunk: c, depth } of chunkTree(chunks)) {
    const div = el("div", `chunk ${depth ? "child" : "parent"}`);
    div.append(el("div", "path", `#${c.chunk_index} ${c.level}${c.chapter ? ` · ${c.chapter}` : ""}${c.page ? ` · page ${c.page}` : ""} · ${c.token_count} tokens`));
    div.append(el("pre", "", c.content));
    box.append(div);
  }
  h.focus();
}

// ---- uploads: several files, dropped or chosen, each with its own progress

const NO_UPLOADS = "This server does not take uploads: add documents through the management API or the drop folder.";

// dropElsewhere handles files dropped anywhere on the page but the drop zone (the chat included): they
// are uploaded from the Knowledge bases view, which opens, or the page says why not. Without this the
// browser would open the file in place of the page.
function dropElsewhere(e) {
  e.preventDefault();
  const files = [...(e.dataTransfer ? e.dataTransfer.files : [])];
  if (!files.length || $("drop").contains(e.target)) return;
  showView("kb");
  if (!state.ingest) { $("docs-msg").textContent = NO_UPLOADS; return; }
  uploadFiles(files);
}

async function uploadFiles(files) {
  if (!files.length) return;
  if (!state.ingest) { $("docs-msg").textContent = NO_UPLOADS; return; }
  let kb = $("kb").value;
  if (!kb) {
    if (!state.kbs.length) { $("docs-msg").textContent = "Create a knowledge base first."; return; }
    kb = await pickKB();
    if (!kb) return;
  }
  await Promise.all([...files].map(f => uploadOne(kb, f)));
  loadDocuments();
}

// settleUploads removes an upload's "uploaded; processing" line once the table shows its document done
// (ready or failed): the row then says it, and a line above it saying "processing" would contradict it.
function settleUploads(docs) {
  const status = new Map(docs.map(d => [d.id, d.status]));
  for (const li of $("uploads").querySelectorAll("li.uploaded")) {
    const s = status.get(li.dataset.doc);
    if (s && !isBusy({ status: s })) li.remove();
  }
}

function uploadOne(kb, file) {
  const li = el("li");
  const bar = el("progress");
  bar.max = 100;
  bar.value = 0;
  bar.setAttribute("aria-label", `Uploading ${file.name}`);
  const st = el("span", "", "uploading");
  li.append(el("span", "", `${file.name} → ${kb}`), bar, st);
  li.dataset.kb = kb;
  $("uploads").append(li);
  // a failed upload keeps its message, not a progress bar that looks finished
  const failed = (msg) => { bar.remove(); st.textContent = `failed: ${msg}`; st.className = "error"; };
  if (file.size === 0) {
    failed("the file is empty (0 bytes): there is nothing in it to add");
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const send = (retried) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `/api/kbs/${encodeURIComponent(kb)}/documents`);
      for (const [k, v] of Object.entries(authHeaders())) xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (e) => { if (e.lengthComputable) bar.value = Math.round(100 * e.loaded / e.total); };
      xhr.onload = async () => {
        if (xhr.status === 401 && !retried && (await signIn("sign in to upload"))) { send(true); return; }
        if (xhr.status >= 200 && xhr.status < 300) {
          bar.value = 100;
          // the server keeps a file name's last path part only (RFC 7578): say so when that changed it
          let stored = file.name, id = "";
          try { ({ file_name: stored = file.name, id = "" } = JSON.parse(xhr.responseText)); } catch { /* not JSON */ }
          st.textContent = stored === file.name ? "uploaded; processing" : `uploaded as “${stored}”; processing`;
          li.dataset.doc = id;
          li.classList.add("uploaded");
          // a renamed file's line stays a while longer, so that the new name can be read
          setTimeout(() => li.remove(), stored === file.name ? 4000 : 15000);
        } else {
          let msg = `HTTP ${xhr.status}`;
          try { msg = JSON.parse(xhr.responseText).error.message; } catch { /* not JSON */ }
          failed(msg);
        }
        resolve();
      };
      xhr.onerror = () => { failed("the server cannot be reached"); resolve(); };
      const form = new FormData();
      form.append("file", file, file.name);
      xhr.send(form);
    };
    send(false);
  });
}

// ---- retrieval test

async function runSearch(e) {
  e.preventDefault();
  const out = $("search-out");
  const query = $("search-q").value.trim();
  if (!query) return;
  out.textContent = "Searching…";
  let res;
  try {
    res = await postJSON("/api/search", $("kb").value ? { query, kbs: [$("kb").value] } : { query });
  } catch (err) {
    out.textContent = "";
    out.append(el("p", "error", err.message));
    return;
  }
  out.textContent = "";
  const p = res.profile || {};
  out.append(el("p", "hint", `Query profile: ${p.specificity || "?"}, ${p.complexity || "?"} (BM25 weight ${fmt(p.bm25_weight)}, vector weight ${fmt(p.vector_weight)})${p.reason ? ` ${p.reason}` : ""}`));
  const hits = (title, list) => stageTable(title, list || [], ["#", "score", "document", "chunk"],
    (h, i) => [i + 1, fmt(h.score, 4), state.docNames.get(h.document_id) || h.document_id, h.chunk_id]);
  const evid = (title, list) => stageTable(title, list || [], ["#", "score", "source", "passage"], (x, i) => [i + 1, fmt(x.score, 4), [x.file_name, x.chapter].filter(Boolean).join(" › "), clip(plainText(x.child_text || x.text || ""), 160)]);
  out.append(hits("Keyword (BM25)", res.keyword), hits("Vector", res.vector), hits("Fused (weighted RRF)", res.fused),
    evid("Reranked", res.reranked), evid("Filtered", res.filtered), evid("Evidence (MMR, parents, compressed)", res.evidence));
  const g = res.grade || {};
  out.append(el("p", "", `Grade: ${g.tier || "?"} (top ${fmt(g.top_score)}, coverage ${fmt(g.coverage)}): ${g.reason || ""}`));
  const timing = stageSummary(res.stage_ms);
  if (timing) out.append(el("p", "hint", timing));
  if ((res.degraded || []).length) out.append(el("p", "warn", `Degraded: ${res.degraded.join(", ")}`));
}

const fmt = (x, digits = 2) => (typeof x === "number" ? x.toFixed(digits) : "?");
const clip = (s, n) => ([...s].length > n ? [...s].slice(0, n).join("") + "…" : s);

function stageTable(title, rows, head, cells) {
  const sec = el("section", "stage");
  sec.append(el("h3", "", `${title} (${rows.length})`));
  if (!rows.length) return sec;
  const table = el("table");
  const tr = el("tr");
  for (const h of head) { const th = el("th", "", h); th.scope = "col"; tr.append(th); }
  const thead = el("thead");
  thead.append(tr);
  const tbody = el("tbody");
  rows.slice(0, 10).forEach((r, i) => {
    const row = el("tr");
    cells(r, i).forEach((c, j) => row.append(el("td", j < 2 ? "num" : "", c)));
    tbody.append(row);
  });
  table.append(thead, tbody);
  sec.append(table);
  return sec;
}

// ---- shell: views, the phone menu

function showView(name) {
  const kb = name === "kb";
  $("chat-view").hidden = kb;
  $("kb-view").hidden = !kb;
  if (kb) { $("tab-chat").removeAttribute("aria-current"); $("tab-kb").setAttribute("aria-current", "page"); }
  else { $("tab-kb").removeAttribute("aria-current"); $("tab-chat").setAttribute("aria-current", "page"); }
  if (kb) loadDocuments();
  if (location.hash !== (kb ? "#kb" : "")) history.replaceState(null, "", kb ? "#kb" : location.pathname);
}

function toggleMenu(open) {
  document.body.classList.toggle("menu-open", open);
  $("menu").setAttribute("aria-expanded", String(open));
  $("scrim").hidden = !open;
  if (open) $("new").focus();
}
const closeMenu = () => toggleMenu(false);

function wire() {
  $("ask").onsubmit = (e) => {
    e.preventDefault();
    const q = $("question").value.trim();
    if (q) submitQuestion(q);
  };
  $("question").onkeydown = (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("ask").requestSubmit(); }
  };
  $("stop").onclick = () => {
    if (!state.controller) return;
    state.controller.byUser = true; // not a new or reopened conversation leaving this one
    state.controller.abort();
  };
  $("new").onclick = newConversation;
  $("kb").onchange = () => chooseKB($("kb").value);
  $("conv-search").oninput = renderConversations;
  $("menu").onclick = () => toggleMenu(!document.body.classList.contains("menu-open"));
  $("scrim").onclick = closeMenu;
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && document.body.classList.contains("menu-open")) { closeMenu(); $("menu").focus(); } });
  $("tab-chat").onclick = () => showView("chat");
  $("tab-kb").onclick = () => showView("kb");
  $("signout").onclick = signOut;
  $("kb-create").onsubmit = createKB;
  $("search-form").onsubmit = runSearch;
  $("choose").onclick = () => $("file").click();
  $("file").onchange = () => { const files = [...$("file").files]; $("file").value = ""; uploadFiles(files); };
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); uploadFiles([...e.dataTransfer.files]); });
  window.addEventListener("dragover", (e) => e.preventDefault());
  window.addEventListener("drop", dropElsewhere);
}

async function start() {
  wire();
  if (location.hash === "#kb") showView("kb");
  await loadMe();
  try {
    await loadKBs();
  } catch (err) {
    $("docs-msg").textContent = err.message;
    if (err.offline) alertStatus(err.message);
  }
  loadConversations();
  loadMemories();
}

if (typeof document !== "undefined") {
  document.addEventListener("DOMContentLoaded", start);
}
