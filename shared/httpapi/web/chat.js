// Chat: one question and its answer (a turn), built from the server-sent events by the same code live and
// when a conversation is reopened: timeline, streamed markdown, badge, warnings, claims and sources.

import { readChunk, request, errorMessage } from "./api.js";
import { loadConversations, loadMemories } from "./conversations.js";
import { $, el, button, state, announce } from "./dom.js";
import { stageSummary } from "./kbs.js";
import { activeFilter, isFilterRefusal, showFilterError, inferredLine } from "./filters.js";
import { safeHref, plainText, findClaim, renderMarkdown } from "./markdown.js";

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

// confidenceReason explains a confidence in words from its parts.
export function confidenceReason(c) {
  if (!c) return "";
  const parts = [];
  if (c.citation_coverage !== undefined) parts.push(`${Math.round(c.citation_coverage * 100)}% of sentences cited`);
  if (c.retrieval_signal !== undefined) parts.push(`retrieval signal ${Number(c.retrieval_signal).toFixed(2)}`);
  if (c.invalid_citations) parts.push(`${c.invalid_citations} invalid citation${c.invalid_citations === 1 ? "" : "s"}`);
  return parts.join(", ");
}

// markClaims wraps each unsupported claim's sentence in <mark> where it is found in the answer (across
// the text around citation buttons and emphasis), and lists every unsupported claim with its reason
// below the answer, as text (the server states a claim in markdown). Every claim, supported ones too,
// moves the search on: the claims are the answer's cited sentences in order. Marks only split text
// nodes, so the text findClaim counts in stays the same from one claim to the next.
export function markClaims(turn, claims) {
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
export function answerTextNodes(box) {
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
export function wrapClaim(nodes, hit, title) {
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

export function newTurn(question) {
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
  const turn = { n, root, timeline, summary, steps, box, meta, question, text: "", sources: [], path: "", grade: null, started: performance.now(), done: null, failed: false };
  turn.cite = (k) => showSource(turn, k); // a citation button in the answer opens source k
  return turn;
}

let renderQueued = null;

export function scheduleRender(turn) {
  if (renderQueued) return;
  renderQueued = requestAnimationFrame(() => {
    renderQueued = null;
    if (turn.done) return; // done rendered the final answer (and its claim marks) already
    renderMarkdown(turn.box, turn.text, turn.sources.length, turn);
    scrollToEnd();
  });
}

export function scrollToEnd() {
  const t = $("turns");
  if (t.scrollHeight - t.scrollTop - t.clientHeight < 200) t.scrollTop = t.scrollHeight;
}

export function handleEvent(turn, name, data) {
  const line = timelineLine(name, data) ?? inferredLine(name, data);
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

export function finishTurn(turn, d) {
  turn.done = d;
  if (renderQueued) { cancelAnimationFrame(renderQueued); renderQueued = null; }
  turn.box.classList.remove("streaming");
  turn.sources = d.sources || [];
  renderMarkdown(turn.box, d.answer ?? turn.text, turn.sources.length, turn);
  const steps = turn.steps.children.length;
  const secs = d.stage_ms && d.stage_ms.total ? ` · ${(d.stage_ms.total / 1000).toFixed(1)} s` : "";
  // a reopened stopped answer reads as it did when it was stopped; a cached one says when it was first
  // answered, its steps being those of that first answer
  turn.summary.textContent = d.stopped ? "Stopped" : d.from_cache && d.cached ? cachedLine(d.cached)
    : `${steps} step${steps === 1 ? "" : "s"} · path ${d.short_circuit || d.path || turn.path || "?"}${secs}`;
  if (d.from_cache && d.cached && !d.stopped) {
    const first = stageSummary(d.cached.stage_ms);
    if (first) turn.steps.append(el("li", "", `first answer's steps: ${first}`));
  }
  turn.timeline.open = false;
  // an abstention is its own state: the documents do not say, which is not a LOW answer, so neither the
  // confidence badge nor the low-confidence warning streamed before done
  const abstained = Boolean(d.abstained) && !d.stopped;
  if (abstained) for (const w of turn.root.querySelectorAll(":scope > .warn")) w.remove();
  const band = !abstained && d.confidence && d.confidence.band;
  // a stopped answer (stored by the server with what was sent before the stop) has no confidence
  const label = d.stopped ? "stopped" : abstained ? "the documents do not say" : band ? `${band} confidence ${Number(d.confidence.score).toFixed(2)}` : (d.short_circuit || d.path || "answer");
  const badge = el("span", `badge ${abstained ? "abstained" : (!d.stopped && band) || "none"}`, label);
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
  renderSources(turn, { searched: abstained, flags: d.injection_flags });
  // the streamed text is not announced token by token; its end is
  if (!turn.replayed) {
    announce(abstained ? `The documents do not say; ${turn.sources.length} sources searched.`
      : `Answer ready${band ? `, ${band} confidence` : ""}, ${turn.sources.length} sources.`);
  }
  if ((d.recommendations || []).length) {
    turn.root.append(el("div", "related", "Related: " + d.recommendations.map(x => x.file_name).join(", ")));
  }
  if (d.conversation_id) state.conversation = d.conversation_id;
}

// renderSources lists the answer's sources: searched and not cited for an abstention; a source the
// server flagged as carrying instructions (injection_flags) is marked as such, with why, and was not
// obeyed (docs/answers.md).
export function renderSources(turn, { searched = false, flags = [] } = {}) {
  if (!turn.sources.length) return;
  const det = el("details", searched ? "sources searched" : "sources");
  const n = turn.sources.length;
  det.append(el("summary", "", searched ? `${n} source${n === 1 ? "" : "s"} searched, none cited` : `${n} source${n === 1 ? "" : "s"}`));
  const flagged = new Map();
  for (const f of Array.isArray(flags) ? flags : []) if (f && Number.isInteger(f.source)) flagged.set(f.source, f);
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
    const f = flagged.get(s.n);
    if (f) {
      li.classList.add("flagged");
      li.append(el("span", "flag", `contains instructions, ignored: ${injectionReason(f.reason)}`));
    }
    li.append(el("span", "snippet", plainText(s.snippet || "")));
    ol.append(li);
  }
  det.append(ol);
  turn.sourcesBox = det;
  turn.root.append(det);
}

// INJECTION_REASONS says in words what each injection_flags reason found in a passage (docs/answers.md).
const INJECTION_REASONS = {
  "ignore-instructions": "it tells the assistant to ignore its instructions",
  "system-prompt": "it poses as a system or assistant message",
  "role-play": "it tells the assistant to play another role",
  "reply-instruction": "it dictates what the reply must say",
  exfiltration: "it tries to send the conversation or links elsewhere",
  "hidden-text": "it hides characters inside words",
};

// injectionReason is a flag's reason in words; an unknown one is shown as the server sent it (as text).
export const injectionReason = (r) => INJECTION_REASONS[r] || `flagged as ${String(r || "an instruction")}`;

// cachedLine is a cached answer's one-line timeline: when the answer was first given, and to what
// question (the server's cached.answered_at, UTC, shown in the reader's time zone).
export function cachedLine(c) {
  const at = new Date(c.answered_at);
  const when = Number.isNaN(at.getTime()) ? "earlier" : at.toLocaleString("en", { dateStyle: "medium", timeStyle: "short" });
  return `from cache: first answered ${when}${c.question ? ` for “${c.question}”` : ""}`;
}

// showSource opens the turn's sources, scrolls to source n and highlights it (the last one clicked).
export function showSource(turn, n) {
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
export function failTurn(turn, message, offline) {
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

export async function ask(question) {
  const turn = newTurn(question);
  const body = { question };
  if ($("kb").value) body.kbs = [$("kb").value];
  if (state.conversation) body.conversation_id = state.conversation;
  const filter = activeFilter();
  if (filter) body.filter = filter;
  const controller = new AbortController();
  state.controller = controller;
  const epoch = state.convEpoch;
  let started = ""; // the conversation the server stored the question in, named before the answer
  setStreaming(true);
  try {
    const r = await request("/api/chat", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal: controller.signal });
    if (!r.ok) {
      const message = await errorMessage(r);
      if (filter && isFilterRefusal(r.status, message)) {
        // the filter is what was refused: said by the chips, the question back in the box, no failed turn
        showFilterError("chat", message);
        turn.root.remove();
        if (!$("question").value) $("question").value = question;
        return;
      }
      failTurn(turn, message, false);
      return;
    }
    showFilterError("chat", "");
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

export function setStreaming(on) {
  $("send").hidden = on;
  $("stop").hidden = !on;
  if (on) $("stop").focus();
  else if (document.activeElement === $("stop") || document.activeElement === document.body) $("question").focus();
}

export function submitQuestion(q) {
  if (state.controller) return;
  $("question").value = "";
  ask(q);
}
