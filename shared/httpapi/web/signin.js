// Sign-in: the API key dialog on a 401 (the key kept in this tab's sessionStorage) and who is signed in.

import { KEY, api } from "./api.js";
import { $, state } from "./dom.js";

let signingIn = null;

// signIn asks for an API key (one dialog however many requests were refused at once); it resolves true
// when a key was entered, false when the dialog was dismissed.
export function signIn(message) {
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

export async function loadMe() {
  try {
    state.me = await api("/api/me");
  } catch {
    state.me = null; // an older server without /api/me
  }
  const me = state.me;
  $("who").hidden = !me || me.auth === "none";
  if (me) $("who-name").textContent = whoText(me);
}

export function signOut() {
  sessionStorage.removeItem(KEY);
  state.me = null;
  $("who").hidden = true;
  location.reload();
}

// whoText is the header's line for the signed-in user: name, tenant, role and the token's groups (the
// identities a connector's access lists may name; a key carries none), as text.
export function whoText(me) {
  const groups = Array.isArray(me.groups) && me.groups.length ? ` · groups: ${me.groups.map(String).join(", ")}` : "";
  return `Signed in as ${me.email || me.user} (${me.tenant}${me.role ? `, ${me.role}` : ""})${groups}`;
}
