// A test double of a docmind server whose uploads are presigned (on AWS: the page asks the API for a URL,
// then PUTs the file to S3 itself). It serves the page's own files (shared/httpapi/web) with the real
// server's Content-Security-Policy, plus the storage's origin in connect-src as web.go adds it, and
// implements the contract the page relies on:
//   GET /api/kbs -> {"knowledge_bases": [...], "ingest": bool, "upload": {"mode", "max_bytes"}}; in
//   presigned mode "ingest" is false, as the AWS query function that serves the page says (it deletes and
//   reprocesses nothing itself, yet signs the uploads)
//   POST /api/kbs/{kb}/uploads {"file_name","size","content_type"}
//     -> {"document_id","url","method":"PUT","headers":{...},"expires_at","max_bytes"}
//   PUT <url> on a second origin (the storage), which checks the signed headers exactly, answers CORS
//   preflights for the page's origin only, and refuses like S3 (403, an XML <Error>).
// A document shows in GET /api/kbs/{kb}/documents once its file arrived: processing, then ready a
// moment later. Mode "direct" takes multipart POST /api/kbs/{kb}/documents instead, as docmind serve.
import http from "node:http";
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const WEB = join(dirname(fileURLToPath(import.meta.url)), "../../shared/httpapi/web");
const TYPES = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8" };

const listen = (srv) => new Promise((resolve) => srv.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${srv.address().port}`)));
const readBody = (req) => new Promise((resolve) => { const parts = []; req.on("data", (b) => parts.push(b)); req.on("end", () => resolve(Buffer.concat(parts))); });

// startDouble starts the two servers; csp is the real server's policy (its header on "/").
export async function startDouble({ csp, mode = "presigned", maxBytes = 64 << 20, kb = "s3-kb" }) {
  const st = { mode, maxBytes, grants: [], puts: [], posts: [], docs: [], pageOrigin: "", storageOrigin: "" };
  const storage = http.createServer(async (req, res) => {
    const cors = { "Access-Control-Allow-Origin": st.pageOrigin, Vary: "Origin" };
    if (req.headers.origin !== st.pageOrigin) { res.writeHead(403); res.end(); return; }
    if (req.method === "OPTIONS") {
      res.writeHead(204, { ...cors, "Access-Control-Allow-Methods": "PUT", "Access-Control-Allow-Headers": req.headers["access-control-request-headers"] || "" });
      res.end();
      return;
    }
    const body = await readBody(req);
    const u = new URL(req.url, st.storageOrigin);
    const grant = st.grants.find(g => g.token === u.searchParams.get("X-Amz-Signature"));
    const put = { method: req.method, path: u.pathname, headers: req.headers, body: body.toString("utf8"), ok: false };
    st.puts.push(put);
    const xml = (code, msg) => { res.writeHead(code, { ...cors, "Content-Type": "application/xml" }); res.end(`<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>${msg}</Message></Error>`); };
    if (!grant || req.method !== "PUT") return xml(403, "no such signature");
    // the signed headers, exactly: each present with its value, and no credential of docmind's
    for (const [k, v] of Object.entries(grant.headers)) if (req.headers[k.toLowerCase()] !== v) return xml(403, `SignatureDoesNotMatch: ${k}`);
    if (req.headers.authorization || req.headers["x-docmind-authorization"]) return xml(400, "an Authorization header beside a presigned URL");
    if (grant.file_name.includes("refused")) return xml(403, "Request has expired");
    put.ok = true;
    const doc = { id: grant.document_id, kb_id: "kb_s3", file_name: grant.file_name, status: "processing", chunk_count: 0 };
    st.docs.push(doc);
    setTimeout(() => { doc.status = "ready"; doc.chunk_count = 1; }, 1000);
    res.writeHead(200, { ...cors, ETag: '"etag"', "Access-Control-Expose-Headers": "ETag" });
    res.end();
  });
  const json = (res, code, v) => { res.writeHead(code, { "Content-Type": "application/json" }); res.end(JSON.stringify(v)); };
  const api = http.createServer(async (req, res) => {
    const u = new URL(req.url, st.pageOrigin);
    const p = u.pathname;
    if (req.method === "GET" && !p.startsWith("/api/")) {
      const name = p === "/" ? "index.html" : p.slice(1);
      const ext = name.slice(name.lastIndexOf("."));
      if (!/^[a-z]+\.(js|css|html)$/.test(name) || !TYPES[ext]) { res.writeHead(404); res.end(); return; }
      res.writeHead(200, { "Content-Type": TYPES[ext], "Content-Security-Policy": st.csp, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache" });
      res.end(readFileSync(join(WEB, name)));
      return;
    }
    const body = await readBody(req);
    if (req.method === "GET" && p === "/api/me") return json(res, 200, { auth: "none", user: "local", tenant: "local" });
    if (req.method === "GET" && p === "/api/conversations") return json(res, 200, { conversations: [] });
    if (req.method === "GET" && p === "/api/memories") return json(res, 200, { memories: [] });
    if (req.method === "GET" && p === "/api/kbs") {
      const out = { knowledge_bases: [{ id: "kb_s3", tenant: "local", name: kb, description: "", documents: st.docs.length, role: "owner", version: 0 }], ingest: st.mode !== "presigned" };
      if (st.mode !== "absent") out.upload = { mode: st.mode, max_bytes: st.maxBytes };
      return json(res, 200, out);
    }
    if (req.method === "GET" && p === `/api/kbs/${kb}/documents`) return json(res, 200, { documents: st.docs });
    if (req.method === "POST" && p === `/api/kbs/${kb}/uploads`) {
      let r;
      try { r = JSON.parse(body.toString("utf8")); } catch { return json(res, 400, { error: { code: "Invalid", message: "the body is not JSON" } }); }
      st.grants.push({ request: r, auth: req.headers.authorization || "", contentType: req.headers["content-type"] });
      if (typeof r.file_name !== "string" || !r.file_name || !Number.isInteger(r.size) || r.size <= 0 || typeof r.content_type !== "string") {
        return json(res, 400, { error: { code: "Invalid", message: "file_name, size and content_type are required" } });
      }
      if (r.size > st.maxBytes) return json(res, 413, { error: { code: "TooLarge", message: "the file is larger than the upload limit" } });
      const g = st.grants[st.grants.length - 1];
      g.document_id = `doc_s3_${st.grants.length}`;
      g.token = `sig${st.grants.length}x${Math.random().toString(36).slice(2)}`;
      g.file_name = r.file_name;
      g.headers = { "Content-Type": r.content_type, "x-amz-meta-docmind-document": g.document_id };
      return json(res, 200, { document_id: g.document_id, method: "PUT", headers: g.headers, max_bytes: st.maxBytes,
        url: `${st.storageOrigin}/docmind-uploads/inbox/${kb}/${encodeURIComponent(r.file_name)}?X-Amz-Expires=900&X-Amz-Signature=${g.token}`,
        expires_at: new Date(Date.now() + 900_000).toISOString() });
    }
    if (req.method === "POST" && p === `/api/kbs/${kb}/documents`) {
      const text = body.toString("utf8");
      const name = /filename="([^"]*)"/.exec(text);
      st.posts.push({ contentType: req.headers["content-type"] || "", body: text });
      const doc = { id: `doc_direct_${st.posts.length}`, kb_id: "kb_s3", file_name: name ? name[1] : "?", status: "ready", chunk_count: 1 };
      st.docs.push(doc);
      return json(res, 202, doc);
    }
    return json(res, 404, { error: { code: "NotFound", message: `no route ${req.method} ${p}` } });
  });
  st.pageOrigin = await listen(api);
  st.storageOrigin = await listen(storage);
  // the real server's policy with the storage's origin in connect-src, as web.go's webCSPFor adds it
  st.csp = csp.replace("connect-src 'self';", `connect-src 'self' ${st.storageOrigin};`);
  st.close = () => Promise.all([api, storage].map(s => new Promise(r => { s.closeAllConnections(); s.close(r); })));
  return st;
}
