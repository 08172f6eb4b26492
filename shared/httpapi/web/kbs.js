// Knowledge bases (list, choose, create, delete) and their documents (status, stage times, chunks).

import { api, postJSON } from "./api.js";
import { canManage, openConnectors } from "./connectors.js";
import { $, el, button, state, confirmDialog } from "./dom.js";
import { parseMarkdown, renderMarkdown } from "./markdown.js";
import { settleUploads } from "./uploads.js";

// STAGE_ORDER is the order stages run in: ingestion's (extract, with the waits it includes, then chunk,
// embed, index), retrieval's and the answer's. The server's stage_ms is a JSON object from a Go map, so
// its keys arrive sorted by name, not in the order they ran.
export const STAGE_ORDER = ["extract", "extract_wait", "pdf_engine_start", "chunk", "embed", "index",
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

// ---- knowledge bases

export async function loadKBs() {
  const { knowledge_bases, ingest, upload, connectors } = await api("/api/kbs");
  state.kbs = knowledge_bases;
  state.connectors = connectors === true; // editors manage connectors here (docmind serve)
  // how files are sent: "direct" (multipart to this server) or "presigned" (to the storage, with a URL
  // this server signs); an older server says nothing, and takes them directly
  state.upload = upload && typeof upload === "object" ? upload : { mode: "direct" };
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

export function renderKBList() {
  const ul = $("kb-list");
  ul.textContent = "";
  // "All knowledge bases" counts them all, when the server counted each (an older one sends no count)
  const counted = state.kbs.every(k => typeof k.documents === "number");
  const all = { name: "", description: "", documents: counted ? state.kbs.reduce((n, k) => n + k.documents, 0) : undefined };
  for (const kb of [all, ...state.kbs]) {
    const li = el("li", kb.name === $("kb").value ? "current" : "");
    const choose = button("", () => chooseKB(kb.name));
    choose.append(el("span", "kbname", kb.name || "All knowledge bases"));
    if (typeof kb.documents === "number") choose.append(el("span", "kbcount", documentCount(kb.documents)));
    // the description is the creator's text: shown as text, cut to one line, whole in the tooltip
    if (kb.description) { choose.append(el("span", "kbdesc", kb.description)); choose.title = kb.description; }
    choose.setAttribute("aria-pressed", String(kb.name === $("kb").value));
    li.append(choose);
    if (kb.name && state.connectors && canManage(kb)) li.append(button("⚙", () => { chooseKB(kb.name); openConnectors(kb, loadDocuments); }, "del", `Connectors of ${kb.name}`));
    if (kb.name && state.ingest) li.append(button("✕", () => deleteKB(kb), "del", `Delete knowledge base ${kb.name}`));
    ul.append(li);
  }
}

// documentCount says how many documents a knowledge base holds: "1 document", "12 documents".
export const documentCount = (n) => `${n} document${n === 1 ? "" : "s"}`;

// recount keeps the knowledge base list's counts up to date with the document lists just loaded
// (uploads and deletes change them between two GET /api/kbs), re-rendering it when one changed.
function recount(lists) {
  let changed = false;
  for (const { kb, n } of lists) {
    const k = state.kbs.find(x => x.name === kb);
    if (k && typeof k.documents === "number" && k.documents !== n) { k.documents = n; changed = true; }
  }
  if (changed) renderKBList();
}

// chooseKB scopes the next questions (the open conversation goes on, searching the knowledge base chosen
// now) and the document list.
export function chooseKB(name) {
  $("kb").value = name;
  renderKBList();
  loadDocuments();
}

export async function createKB(e) {
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

export async function deleteKB(kb) {
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

export const EMPTY_DOCS = "No documents yet: drop files above to add some.";
export const EMPTY_DOCS_NO_INGEST = "No documents yet.";
export const NO_KBS = "No knowledge bases yet: create one above, then drop files on it.";
export const NOTHING_SHARED = "Nothing is shared with you yet: ask the owner of a knowledge base to give you a role on it, or create your own above.";

// emptyDocsMessage is what an empty document list says: with no knowledge base to drop files into, the
// drop hint would send the reader nowhere; a signed-in member sees only what is shared with them.
export function emptyDocsMessage() {
  if (state.kbs.length) return canUpload() ? EMPTY_DOCS : EMPTY_DOCS_NO_INGEST;
  const me = state.me;
  return me && me.auth !== "none" && me.role !== "admin" ? NOTHING_SHARED : NO_KBS;
}

// canUpload: this server takes files, directly or through presigned URLs it signs.
export const canUpload = () => state.ingest || (state.upload && state.upload.mode === "presigned");

// setIngest shows or hides what only a server that ingests can do: the drop zone, document delete and
// reprocess, knowledge base delete. The AWS query function serves this page without them; the
// management API and the drop folder add and remove documents there.
export function setIngest(on) {
  state.ingest = on;
  // the AWS query function takes no uploads itself but signs presigned ones: the file goes to storage
  const up = canUpload();
  $("drop").hidden = !up;
  $("uploads").hidden = !up;
  $("ingest-off").hidden = on || up;
}

export async function loadDocuments() {
  clearTimeout(state.docsTimer);
  const chosen = $("kb").value;
  $("docs-h").textContent = chosen ? `Documents in ${chosen}` : "Documents in all knowledge bases";
  const kbs = chosen ? state.kbs.filter(k => k.name === chosen) : state.kbs;
  let docs = [];
  try {
    const lists = await Promise.all(kbs.map(kb => api(`/api/kbs/${encodeURIComponent(kb.name)}/documents`).then(r => r.documents.map(d => ({ ...d, kb: kb.name })))));
    recount(kbs.map((kb, i) => ({ kb: kb.name, n: lists[i].length })));
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

export function renderDocuments(docs, showKB) {
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
    if (d.ocr_note) status.append(ocrNote(d.ocr_note));
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

export async function showChunks(d) {
  const box = $("chunks");
  box.textContent = "";
  let chunks, doc;
  try {
    // the document itself for its metadata (an older server without GET /api/documents/{id}: none)
    [{ chunks }, doc] = await Promise.all([api(`/api/documents/${encodeURIComponent(d.id)}/chunks`),
      api(`/api/documents/${encodeURIComponent(d.id)}`).catch(() => null)]);
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
  const meta = metadataEntries(doc && doc.metadata);
  if (meta.length) {
    const dl = el("dl", "docmeta");
    dl.setAttribute("aria-label", `Metadata of ${d.file_name}`);
    for (const [k, v] of meta) dl.append(el("dt", "", k), el("dd", "", v));
    box.append(dl);
  }
  const acc = accessView(doc && doc.access);
  if (acc) {
    // who may read it at its source: the principals come from the source, written as text
    const p = el("p", `docaccess${acc.restricted ? " restricted" : ""}`);
    p.setAttribute("aria-label", `Access to ${d.file_name}`);
    if (acc.restricted) {
      const lock = el("span", "lock", "🔒");
      lock.setAttribute("role", "img");
      lock.setAttribute("aria-label", "restricted");
      p.append(lock, document.createTextNode(" "));
    }
    p.append(el("span", "access-text", acc.text));
    if (acc.principals.length) p.append(el("span", "sub access-principals", acc.principals.join(", ")));
    box.append(p);
  }
  const note = (doc && doc.ocr_note) || d.ocr_note;
  if (note) { const p = el("p", "chunk-note"); p.append(ocrNote(note)); box.append(p); }
  const low = new Set(ocrNoteParts(note).flatMap(p => p.pages || []));
  for (const { chunk: c, depth } of chunkTree(chunks)) {
    const poor = c.page && low.has(c.page);
    const div = el("div", `chunk ${depth ? "child" : "parent"}${poor ? " ocr-low" : ""}`);
    div.append(el("div", "path", `#${c.chunk_index} ${c.level}${c.chapter ? ` · ${c.chapter}` : ""}${c.page ? ` · page ${c.page}` : ""} · ${c.token_count} tokens${poor ? " · low OCR confidence" : ""}`));
    if (isTableChunk(c)) {
      // a table reads as a table, through the same text-only renderer as answers (links to other
      // sites shown as text, no images, no HTML)
      const t = el("div", "chunk-md");
      renderMarkdown(t, c.content, 0, null);
      div.append(t);
    } else {
      div.append(el("pre", "", c.content));
    }
    box.append(div);
  }
  h.focus();
}

// isTableChunk says a chunk is rendered as a table: the chunker typed it "table", or its text holds a
// markdown table (a parent section around one).
export const isTableChunk = (c) => c.content_type === "table" || parseMarkdown(c.content || "").some(b => b.type === "table");

// metadataEntries turns a document's metadata object into [key, value as text] pairs, by key: a list is
// joined with ", ", anything else that is not text is written as JSON; never markup.
export function metadataEntries(m) {
  if (!m || typeof m !== "object" || Array.isArray(m)) return [];
  const text = (v) => (typeof v === "string" ? v : Array.isArray(v) ? v.map(text).join(", ") : JSON.stringify(v));
  return Object.keys(m).sort().map(k => [k, text(m[k])]);
}

// accessView reads GET /api/documents/{id}'s access ({connector, enforced, principals, restricted}; absent
// for an upload): null without one, else whether to show the lock, the sentence and the principals
// (the source's own names: text only).
export function accessView(a) {
  if (!a || typeof a !== "object") return null;
  const principals = Array.isArray(a.principals) ? a.principals.map(String) : [];
  const from = a.connector ? ` (connector ${a.connector})` : "";
  let text;
  if (a.restricted) {
    text = principals.length ? `Restricted at the source${from}: readable by` : `Restricted${from}: its source's permissions are not known yet, so no one but an admin reads it`;
  } else if (a.enforced === false) {
    text = `Open to every reader of the knowledge base${from}: the connector does not enforce the source's permissions${principals.length ? "; recorded at the source:" : ""}`;
  } else {
    text = `Open to every reader of the knowledge base${from}${principals.length ? "; readable at the source by" : ""}`;
  }
  return { restricted: a.restricted === true, text, principals };
}

// ocrNoteParts splits a document's OCR note ("OCR (eng) on 2 page(s), mean confidence 74%; low confidence
// on page(s) 2, 5: check the scan") into its parts, the low-confidence one with its page numbers.
export function ocrNoteParts(note) {
  if (!note) return [];
  return String(note).split(/;\s*/).filter(Boolean).map((text) => {
    const m = /low confidence on page\(s\)\s*([\d,\s]+)/i.exec(text);
    return m ? { text, low: true, pages: m[1].split(/[,\s]+/).filter(Boolean).map(Number) } : { text, low: false };
  });
}

// ocrNote shows an OCR note, its low-confidence pages highlighted.
function ocrNote(note) {
  const span = el("span", "sub ocr");
  ocrNoteParts(note).forEach((p, i) => {
    if (i) span.append(document.createTextNode("; "));
    span.append(p.low ? el("strong", "ocr-low", p.text) : document.createTextNode(p.text));
  });
  return span;
}
