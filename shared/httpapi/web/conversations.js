// Conversations (grouped by day, searched, deleted, reopened by replaying their traces) and memories.

import { api } from "./api.js";
import { newTurn, handleEvent, finishTurn } from "./chat.js";
import { $, el, button, state, confirmDialog, alertStatus } from "./dom.js";
import { renderKBList } from "./kbs.js";
import { showView, closeMenu } from "./shell.js";

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
// ---- conversations

export async function loadConversations() {
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

export function renderConversations() {
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

export async function deleteConversation(c) {
  if (!(await confirmDialog(`Delete the conversation “${c.title || c.id}”? Its messages are removed for good.`))) return;
  try {
    await api(`/api/conversations/${encodeURIComponent(c.id)}`, { method: "DELETE" });
    if (state.conversation === c.id) newConversation();
  } catch (err) {
    alertStatus(err.message);
  }
  loadConversations();
}

export function newConversation() {
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
export async function openConversation(id) {
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

export async function loadMemories() {
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
