// The shell: the chat and knowledge-base views, the phone menu.

import { $ } from "./dom.js";
import { loadDocuments } from "./kbs.js";

// ---- shell: views, the phone menu

export function showView(name) {
  const kb = name === "kb";
  $("chat-view").hidden = kb;
  $("kb-view").hidden = !kb;
  if (kb) { $("tab-chat").removeAttribute("aria-current"); $("tab-kb").setAttribute("aria-current", "page"); }
  else { $("tab-kb").removeAttribute("aria-current"); $("tab-chat").setAttribute("aria-current", "page"); }
  if (kb) loadDocuments();
  if (location.hash !== (kb ? "#kb" : "")) history.replaceState(null, "", kb ? "#kb" : location.pathname);
}

export function toggleMenu(open) {
  document.body.classList.toggle("menu-open", open);
  $("menu").setAttribute("aria-expanded", String(open));
  $("scrim").hidden = !open;
  if (open) $("new").focus();
}
export const closeMenu = () => toggleMenu(false);
