// The page's DOM helpers (elements built with textContent only), its shared state and its dialogs.

export const $ = (id) => document.getElementById(id);
export const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
};
export const button = (text, onclick, cls = "", label = "") => {
  const b = el("button", cls, text);
  b.type = "button";
  if (label) b.setAttribute("aria-label", label);
  b.onclick = onclick;
  return b;
};

// state is what the modules share: the open conversation, the knowledge bases, the streaming answer.
export const state = {
  conversation: "",
  conversations: [],
  kbs: [],
  turnCount: 0,
  controller: null, // the AbortController of the streaming answer
  convEpoch: 0, // counts New and Open: an answer stopped before either does not adopt its conversation
  docsTimer: 0,
  me: null,
  ingest: true, // whether this server takes uploads, deletes and reprocessing (GET /api/kbs says)
  upload: { mode: "direct" }, // how uploads are sent (GET /api/kbs "upload": direct or presigned, max_bytes)
  docNames: new Map(), // document id -> file name, for the retrieval test's keyword and vector hits
};

// announce says something to a screen reader through the status region (an answer's end, not its tokens).
export function announce(text) {
  $("announce").textContent = text;
}

// ---- dialogs

export function confirmDialog(text, ok = "Delete") {
  return new Promise((resolve) => {
    const dlg = $("dlg-confirm");
    $("confirm-text").textContent = text;
    $("confirm-ok").textContent = ok;
    dlg.returnValue = "";
    dlg.onclose = () => resolve(dlg.returnValue === "ok");
    dlg.showModal();
  });
}

// alertStatus shows a failure that belongs to no answer (a conversation that cannot be opened) in the chat.
export function alertStatus(message) {
  const t = $("turns");
  const box = el("div", "failbox", message);
  box.setAttribute("role", "alert");
  t.append(box);
}
