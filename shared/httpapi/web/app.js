// docmind's web page, its entry module: plain DOM, ES modules loaded by the browser as they are (no build
// step, no third-party code). Everything that comes from the server, a document or a model is written
// with textContent or as text nodes built from a small markdown parser (markdown.js: never parsed as
// HTML), and links are kept only for http and https, so no passage, file name or answer can inject
// markup or script (SR-09, SEC-04); a link in an answer is live only to this origin or to one of the
// answer's own sources (liveLink). The modules, by concern: dom.js (element helpers, shared state,
// dialogs), api.js (same-origin requests with the key), signin.js (the key dialog, who is signed in),
// markdown.js (parser and text-node renderer), chat.js (a question's stream, its turn), conversations.js
// (history, memories), kbs.js (knowledge bases, documents, chunks), uploads.js, search.js (the
// retrieval test), filters.js (metadata filter chips) and shell.js (views, the phone menu). Their pure
// functions are tested with node (app_test.mjs); the DOM code runs only in a browser (test/browser
// drives it). This module wires the controls and starts the page.

import { submitQuestion } from "./chat.js";
import { loadConversations, renderConversations, newConversation, loadMemories } from "./conversations.js";
import { $, state, alertStatus } from "./dom.js";
import { mountFilters } from "./filters.js";
import { loadKBs, chooseKB, createKB } from "./kbs.js";
import { runSearch } from "./search.js";
import { showView, toggleMenu, closeMenu } from "./shell.js";
import { loadMe, signOut } from "./signin.js";
import { dropElsewhere, uploadFiles } from "./uploads.js";

function wire() {
  mountFilters();
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
