// docmind's web page: plain DOM, no build step. Everything that comes from the server or a document is
// written with textContent (never parsed as HTML), so no passage or answer can inject markup (SR-09).

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

// citationParts splits an answer into text and citation parts; a marker [n] is a citation only when
// 1 <= n <= sourceCount (an invalid one stays plain text, never a link).
export function citationParts(text, sourceCount) {
  const parts = [];
  const re = /\[(\d{1,3})\]/g;
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
    default: return null;
  }
}

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

let conversation = "";

async function api(path, opts) {
  const r = await fetch(path, opts);
  if (!r.ok && r.status !== 204) {
    let msg = r.statusText;
    try { msg = (await r.json()).error.message; } catch { /* not JSON */ }
    throw new Error(msg);
  }
  return r.status === 204 ? null : r.json();
}

function renderAnswer(box, text, sources) {
  box.textContent = "";
  for (const p of citationParts(text, sources.length)) {
    if (p.text !== undefined) { box.append(p.text); continue; }
    const a = el("a", "cite", `[${p.cite}]`);
    a.href = `#src-${box.dataset.turn}-${p.cite}`;
    box.append(a);
  }
}

function renderSources(turn, sources, n) {
  const ol = el("ol", "sources");
  for (const s of sources) {
    const li = el("li", s.cited ? "cited" : "");
    li.id = `src-${n}-${s.n}`;
    li.append(el("span", "", [s.file_name, s.chapter].filter(Boolean).join(" › ")));
    li.append(el("span", "snippet", s.snippet));
    ol.append(li);
  }
  turn.append(ol);
}

let turnCount = 0;

async function ask(question) {
  const n = ++turnCount;
  const turn = el("div", "turn");
  turn.append(el("div", "q", question));
  const timeline = el("div", "timeline");
  const box = el("div", "a");
  box.dataset.turn = n;
  turn.append(timeline, box);
  $("turns").append(turn);
  let text = "";
  let sources = [];
  const body = { question };
  if ($("kb").value) body.kbs = [$("kb").value];
  if (conversation) body.conversation_id = conversation;
  const r = await fetch("/api/chat", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!r.ok) {
    let msg = r.statusText;
    try { msg = (await r.json()).error.message; } catch { /* not JSON */ }
    box.append(el("span", "error", msg));
    return;
  }
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const parsed = parseSSE(buf + dec.decode(value, { stream: true }));
    buf = parsed.rest;
    for (const { name, data } of parsed.events) {
      const line = timelineLine(name, data);
      if (line) timeline.append(el("div", "", line));
      if (name === "start") sources = data.sources || [];
      if (name === "token") { text += data.text; renderAnswer(box, text, sources); }
      if (name === "confidence_warning") turn.append(el("div", "warn", data.message));
      if (name === "error") turn.append(el("div", "error", data.message));
      if (name === "done") {
        renderAnswer(box, data.answer, data.sources || []);
        const band = data.confidence && data.confidence.band;
        turn.append(el("span", `badge ${band || "none"}`, band ? `${band} ${data.confidence.score.toFixed(2)}` : (data.short_circuit || data.path)));
        if (data.from_cache) turn.append(el("span", "badge none", "from cache"));
        if ((data.degraded || []).length) turn.append(el("span", "badge none", `degraded: ${data.degraded.join(", ")}`));
        renderSources(turn, data.sources || [], n);
        if ((data.recommendations || []).length) {
          turn.append(el("div", "related", "Related: " + data.recommendations.map(x => x.file_name).join(", ")));
        }
        if (data.conversation_id) conversation = data.conversation_id;
      }
    }
    $("turns").scrollTop = $("turns").scrollHeight;
  }
  loadConversations();
  loadMemories();
}

async function loadKBs() {
  const { knowledge_bases } = await api("/api/kbs");
  for (const kb of knowledge_bases) {
    const o = el("option", "", kb.name);
    o.value = kb.name;
    $("kb").append(o);
  }
  loadDocuments();
}

async function loadDocuments() {
  const ul = $("documents");
  ul.textContent = "";
  if (!$("kb").value) { ul.append(el("li", "", "choose a knowledge base")); return; }
  const { documents } = await api(`/api/kbs/${encodeURIComponent($("kb").value)}/documents`);
  for (const d of documents) {
    const li = el("li");
    li.append(el("span", "", d.file_name), el("span", d.status === "failed" ? "error" : "", d.status));
    if (d.error) li.title = d.error;
    if (d.status === "failed") {
      const retry = el("a", "", "retry");
      retry.onclick = async () => {
        try { await api(`/api/documents/${encodeURIComponent(d.id)}/reprocess`, { method: "POST" }); }
        catch (err) { alert(err.message); }
        setTimeout(loadDocuments, 1000);
      };
      li.append(retry);
    }
    ul.append(li);
  }
}

async function loadConversations() {
  const ul = $("conversations");
  try {
    const { conversations } = await api("/api/conversations");
    ul.textContent = "";
    for (const c of conversations) {
      const li = el("li");
      const a = el("a", "", c.title || c.id);
      a.onclick = () => openConversation(c.id);
      li.append(a);
      ul.append(li);
    }
  } catch { /* history not stored */ }
}

async function openConversation(id) {
  const { messages } = await api(`/api/conversations/${encodeURIComponent(id)}/messages`);
  conversation = id;
  $("turns").textContent = "";
  for (const m of messages) {
    const n = ++turnCount;
    const turn = el("div", "turn");
    if (m.role === "user") { turn.append(el("div", "q", m.content)); $("turns").append(turn); continue; }
    const box = el("div", "a");
    box.dataset.turn = n;
    const sources = m.sources || [];
    renderAnswer(box, m.content, sources);
    turn.append(box);
    if (m.band) turn.append(el("span", `badge ${m.band}`, `${m.band} ${m.confidence.toFixed(2)}`));
    renderSources(turn, sources, n);
    $("turns").append(turn);
  }
}

async function loadMemories() {
  const ul = $("memories");
  try {
    const { memories } = await api("/api/memories");
    ul.textContent = "";
    if (memories.length === 0) ul.append(el("li", "", "nothing yet"));
    for (const m of memories) {
      const li = el("li");
      const forget = el("a", "", "forget");
      forget.onclick = async () => { await api(`/api/memories/${encodeURIComponent(m.id)}`, { method: "DELETE" }); loadMemories(); };
      li.append(el("span", "", `${m.kind}: ${m.content}`), forget);
      ul.append(li);
    }
  } catch { ul.textContent = ""; ul.append(el("li", "", "memory is off")); }
}

if (typeof document !== "undefined") {
  document.addEventListener("DOMContentLoaded", () => {
    $("ask").onsubmit = (e) => {
      e.preventDefault();
      const q = $("question").value.trim();
      if (!q) return;
      $("question").value = "";
      $("send").disabled = true;
      ask(q).catch(err => $("turns").append(el("div", "error", String(err)))).finally(() => { $("send").disabled = false; });
    };
    $("question").onkeydown = (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("ask").requestSubmit(); } };
    $("new").onclick = () => { conversation = ""; $("turns").textContent = ""; };
    $("kb").onchange = () => { conversation = ""; loadDocuments(); };
    $("upload").onsubmit = async (e) => {
      e.preventDefault();
      const f = $("file").files[0];
      if (!f || !$("kb").value) return;
      const form = new FormData();
      form.append("file", f);
      try { await api(`/api/kbs/${encodeURIComponent($("kb").value)}/documents`, { method: "POST", body: form }); }
      catch (err) { alert(err.message); }
      loadDocuments();
      setTimeout(loadDocuments, 2000);
    };
    loadKBs().catch(() => {});
    loadConversations();
    loadMemories();
  });
}
