// The retrieval test: POST /api/search, each stage's candidates and scores.

import { postJSON } from "./api.js";
import { $, el, state } from "./dom.js";
import { activeFilter, isFilterRefusal, showFilterError } from "./filters.js";
import { stageSummary } from "./kbs.js";
import { plainText } from "./markdown.js";

// ---- retrieval test

export async function runSearch(e) {
  e.preventDefault();
  const out = $("search-out");
  const query = $("search-q").value.trim();
  if (!query) return;
  out.textContent = "Searching…";
  const body = $("kb").value ? { query, kbs: [$("kb").value] } : { query };
  const filter = activeFilter();
  if (filter) body.filter = filter;
  let res;
  try {
    res = await postJSON("/api/search", body);
  } catch (err) {
    out.textContent = "";
    if (filter && isFilterRefusal(err.status, err.message)) showFilterError("search", err.message);
    else out.append(el("p", "error", err.message));
    return;
  }
  showFilterError("search", "");
  out.textContent = "";
  const p = res.profile || {};
  out.append(el("p", "hint", `Query profile: ${p.specificity || "?"}, ${p.complexity || "?"} (BM25 weight ${fmt(p.bm25_weight)}, vector weight ${fmt(p.vector_weight)})${p.reason ? ` ${p.reason}` : ""}`));
  const hits = (title, list) => stageTable(title, list || [], ["#", "score", "document", "chunk"],
    (h, i) => [i + 1, fmt(h.score, 4), state.docNames.get(h.document_id) || h.document_id, h.chunk_id]);
  const evid = (title, list) => stageTable(title, list || [], ["#", "score", "source", "passage"], (x, i) => [i + 1, fmt(x.score, 4), [x.file_name, x.chapter].filter(Boolean).join(" › "), clip(plainText(x.child_text || x.text || ""), 160)]);
  out.append(hits("Keyword (BM25)", res.keyword), hits("Vector", res.vector), hits("Fused (weighted RRF)", res.fused),
    evid("Reranked", res.reranked), evid("Filtered", res.filtered), evid("Evidence (MMR, parents, compressed)", res.evidence));
  const g = res.grade || {};
  out.append(el("p", "", `Grade: ${g.tier || "?"} (top ${fmt(g.top_score)}, coverage ${fmt(g.coverage)}): ${g.reason || ""}`));
  const timing = stageSummary(res.stage_ms);
  if (timing) out.append(el("p", "hint", timing));
  if ((res.degraded || []).length) out.append(el("p", "warn", `Degraded: ${res.degraded.join(", ")}`));
}

export const fmt = (x, digits = 2) => (typeof x === "number" ? x.toFixed(digits) : "?");
export const clip = (s, n) => ([...s].length > n ? [...s].slice(0, n).join("") + "…" : s);

export function stageTable(title, rows, head, cells) {
  const sec = el("section", "stage");
  sec.append(el("h3", "", `${title} (${rows.length})`));
  if (!rows.length) return sec;
  const table = el("table");
  const tr = el("tr");
  for (const h of head) { const th = el("th", "", h); th.scope = "col"; tr.append(th); }
  const thead = el("thead");
  thead.append(tr);
  const tbody = el("tbody");
  rows.slice(0, 10).forEach((r, i) => {
    const row = el("tr");
    cells(r, i).forEach((c, j) => row.append(el("td", j < 2 ? "num" : "", c)));
    tbody.append(row);
  });
  table.append(thead, tbody);
  sec.append(table);
  return sec;
}
