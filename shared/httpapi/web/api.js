// Requests: same origin only, the API key (when signed in) on every one, errors in words the reader can act on.

import { signIn } from "./signin.js";

// ---- requests: same origin only, the API key (when signed in) on every one

export const KEY = "docmind.apiKey";

export class OfflineError extends Error {
  constructor() {
    super("Cannot reach the docmind server. Check that it is running and your connection, then retry.");
    this.offline = true;
  }
}

// LostError is a stream that broke after the server started answering (the server stopped, the network
// dropped): the browser says only "network error", so the page names what happened.
export class LostError extends Error {
  constructor() {
    super("The connection to the docmind server was lost in the middle of the answer; what arrived is kept. Check that the server is running, then retry.");
    this.offline = true;
  }
}

// readChunk reads the next part of a streamed response; a failure other than the user's stop is a lost
// connection.
export async function readChunk(reader) {
  try {
    return await reader.read();
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new LostError();
  }
}


// authHeaders adds the key twice: in Authorization, and in X-Docmind-Authorization for a deployment behind
// CloudFront with origin access control, where CloudFront signs the origin request in Authorization and
// the chat function reads the application's credential from X-Docmind-Authorization (DEPLOY.md).
export function authHeaders(extra = {}) {
  const key = sessionStorage.getItem(KEY);
  return key ? { ...extra, Authorization: `Bearer ${key}`, "X-Docmind-Authorization": `Bearer ${key}` } : extra;
}

// bodyHash is the hex SHA-256 of a string body, which CloudFront OAC needs in x-amz-content-sha256 to sign
// a POST to a Lambda function URL; "" where the browser offers no digest (an insecure context) or the
// body is not a string (an upload's form: the query function behind OAC takes no uploads, and its
// GET /api/kbs says so with "ingest": false, which hides the upload controls).
export async function bodyHash(body) {
  if (typeof body !== "string" || !globalThis.crypto || !crypto.subtle) return "";
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// request is fetch with the key, a sign-in prompt on 401 (then a retry with the key entered, up to three
// times, so that a mistyped key can be corrected) and an OfflineError when the server cannot be reached.
export async function request(path, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    let r;
    try {
      const headers = authHeaders(opts.headers);
      const hash = await bodyHash(opts.body);
      if (hash) headers["x-amz-content-sha256"] = hash;
      r = await fetch(path, { ...opts, headers, credentials: "same-origin" });
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw new OfflineError();
    }
    if (r.status !== 401 || attempt >= 3) return r;
    if (!(await signIn(await errorMessage(r)))) return r;
  }
}

export async function errorMessage(r) {
  try { return (await r.json()).error.message; } catch { return r.statusText || `HTTP ${r.status}`; }
}

export async function api(path, opts = {}) {
  const r = await request(path, opts);
  if (!r.ok) throw Object.assign(new Error(await errorMessage(r)), { status: r.status });
  return r.status === 204 ? null : r.json();
}

export const postJSON = (path, body) => api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
