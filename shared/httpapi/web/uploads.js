// Uploads: several files, dropped or chosen, each with its own progress.

import { authHeaders } from "./api.js";
import { $, el, state } from "./dom.js";
import { isBusy, loadDocuments } from "./kbs.js";
import { showView } from "./shell.js";
import { signIn } from "./signin.js";

export function pickKB() {
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

// ---- uploads: several files, dropped or chosen, each with its own progress

export const NO_UPLOADS = "This server does not take uploads: add documents through the management API or the drop folder.";

// dropElsewhere handles files dropped anywhere on the page but the drop zone (the chat included): they
// are uploaded from the Knowledge bases view, which opens, or the page says why not. Without this the
// browser would open the file in place of the page.
export function dropElsewhere(e) {
  e.preventDefault();
  const files = [...(e.dataTransfer ? e.dataTransfer.files : [])];
  if (!files.length || $("drop").contains(e.target)) return;
  showView("kb");
  if (!state.ingest) { $("docs-msg").textContent = NO_UPLOADS; return; }
  uploadFiles(files);
}

export async function uploadFiles(files) {
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
export function settleUploads(docs) {
  const status = new Map(docs.map(d => [d.id, d.status]));
  for (const li of $("uploads").querySelectorAll("li.uploaded")) {
    const s = status.get(li.dataset.doc);
    if (s && !isBusy({ status: s })) li.remove();
  }
}

export function uploadOne(kb, file) {
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
