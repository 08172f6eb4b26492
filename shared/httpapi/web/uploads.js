// Uploads: several files, dropped or chosen, each with its own progress.

import { authHeaders, postJSON } from "./api.js";
import { safeHref } from "./markdown.js";
import { $, el, state } from "./dom.js";
import { canUpload, isBusy, loadDocuments } from "./kbs.js";
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
  if (!canUpload()) { $("docs-msg").textContent = NO_UPLOADS; return; }
  uploadFiles(files);
}

export async function uploadFiles(files) {
  if (!files.length) return;
  if (!canUpload()) { $("docs-msg").textContent = NO_UPLOADS; return; }
  let kb = $("kb").value;
  if (!kb) {
    if (!state.kbs.length) { $("docs-msg").textContent = "Create a knowledge base first."; return; }
    kb = await pickKB();
    if (!kb) return;
  }
  await Promise.all([...files].map(f => uploadOne(kb, f)));
  loadDocuments();
}

// settleUploads settles an upload's "uploaded; processing" line once the table shows its document done
// (ready or failed): the row then says it, and a line above it saying "processing" would contradict it.
// A plain upload's line goes; a renamed file's line stays its while, saying the new name and the
// status, since the new name is what the line is there to tell (the document may be done before the
// person has read it).
export function settleUploads(docs) {
  const status = new Map(docs.map(d => [d.id, d.status]));
  for (const li of $("uploads").querySelectorAll("li.uploaded")) {
    const s = status.get(li.dataset.doc);
    if (!s || isBusy({ status: s })) continue;
    if (li.dataset.stored === undefined) { li.remove(); continue; }
    li.querySelector("span:last-child").textContent = `uploaded as “${li.dataset.stored}”; ${s}`;
    li.classList.remove("uploaded");
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
  const line = {
    progress: (e) => { if (e.lengthComputable) bar.value = Math.round(100 * e.loaded / e.total); },
    // a failed upload keeps its message, not a progress bar that looks finished
    failed: (msg) => { bar.remove(); st.textContent = `failed: ${msg}`; st.className = "error"; },
    // the server keeps a file name's last path part only (RFC 7578): say so when that changed it
    uploaded: (id, stored = file.name) => {
      bar.value = 100;
      st.textContent = stored === file.name ? "uploaded; processing" : `uploaded as “${stored}”; processing`;
      li.dataset.doc = id;
      if (stored !== file.name) li.dataset.stored = stored;
      li.classList.add("uploaded");
      // a renamed file's line stays a while longer, so that the new name can be read
      setTimeout(() => li.remove(), stored === file.name ? 4000 : 15000);
    },
  };
  if (file.size === 0) {
    line.failed("the file is empty (0 bytes): there is nothing in it to add");
    return Promise.resolve();
  }
  const up = state.upload || {};
  if (up.max_bytes > 0 && file.size > up.max_bytes) {
    line.failed(`the file is ${megabytes(file.size)}; this server takes files up to ${megabytes(up.max_bytes)}`);
    return Promise.resolve();
  }
  return up.mode === "presigned" ? uploadPresigned(kb, file, line) : uploadDirect(kb, file, line);
}

// megabytes writes a size for a person: "60 KB", "12.3 MB", "1024 MB".
export const megabytes = (n) => (n < 1e6 ? `${Math.ceil(n / 1e3)} KB` : `${(n / 1e6).toFixed(n < 1e7 ? 1 : 0)} MB`);

// uploadDirect posts the file to the server as multipart (docmind serve, and any server that says
// "direct" or nothing about uploads).
function uploadDirect(kb, file, line) {
  return new Promise((resolve) => {
    const send = (retried) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `/api/kbs/${encodeURIComponent(kb)}/documents`);
      for (const [k, v] of Object.entries(authHeaders())) xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = line.progress;
      xhr.onload = async () => {
        if (xhr.status === 401 && !retried && (await signIn("sign in to upload"))) { send(true); return; }
        if (xhr.status >= 200 && xhr.status < 300) {
          let stored = file.name, id = "";
          try { ({ file_name: stored = file.name, id = "" } = JSON.parse(xhr.responseText)); } catch { /* not JSON */ }
          line.uploaded(id, stored);
        } else {
          let msg = `HTTP ${xhr.status}`;
          try { msg = JSON.parse(xhr.responseText).error.message; } catch { /* not JSON */ }
          line.failed(msg);
        }
        resolve();
      };
      xhr.onerror = () => { line.failed("the server cannot be reached"); resolve(); };
      const form = new FormData();
      form.append("file", file, file.name);
      xhr.send(form);
    };
    send(false);
  });
}

// uploadPresigned asks the server for an upload URL (POST /api/kbs/{kb}/uploads, which checks the role
// and the size and names the document to be), then PUTs the file there itself, with exactly the headers
// the server signed and no others: not the API key (the URL is the credential, and it goes to the
// storage, not to docmind), not a Content-Type of the browser's choosing (the body is sent untyped).
// The document then shows in the table as any other, its status followed by the table's refresh.
async function uploadPresigned(kb, file, line) {
  let grant;
  try {
    grant = await postJSON(`/api/kbs/${encodeURIComponent(kb)}/uploads`,
      { file_name: file.name, size: file.size, content_type: file.type || "application/octet-stream" });
  } catch (err) {
    line.failed(err.message);
    return;
  }
  if (!grant || !grant.url || !safeHref(grant.url)) {
    line.failed("the server gave no upload address");
    return;
  }
  if (grant.max_bytes > 0 && file.size > grant.max_bytes) {
    line.failed(`the file is ${megabytes(file.size)}; this knowledge base takes files up to ${megabytes(grant.max_bytes)}`);
    return;
  }
  await new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open(grant.method || "PUT", grant.url);
    for (const [k, v] of Object.entries(grant.headers || {})) xhr.setRequestHeader(k, String(v));
    xhr.upload.onprogress = line.progress;
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) line.uploaded(grant.document_id || "");
      else line.failed(`the storage refused the file (HTTP ${xhr.status}${storageMessage(xhr.responseText)})`);
      resolve();
    };
    // a network failure, or a storage whose CORS rules do not admit this page
    xhr.onerror = () => { line.failed("the upload could not reach the storage"); resolve(); };
    xhr.send(file.slice(0, file.size)); // a Blob without a type: no Content-Type but the signed one
  });
}

// storageMessage is the <Message> of an S3 error body (XML), as text: ": Request has expired".
export function storageMessage(body) {
  const m = /<Message>([^<]{1,300})<\/Message>/.exec(String(body || ""));
  return m ? `: ${m[1]}` : "";
}
