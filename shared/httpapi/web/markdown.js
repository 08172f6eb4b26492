// The markdown subset answers use, parsed into blocks and inline nodes (pure, tested with node) and
// rendered as elements and text nodes only: raw HTML is text, links are http(s) only and live only to
// this origin or the answer's own sources, images are reduced to their alt text (SEC-04).

import { el, button } from "./dom.js";

// citeMarker is a citation marker as the server reads it (shared/answer citeRe): [n], or the full-width
// 【n】 or ［n］ some models write in Chinese. The page must read the same markers, or a claim the server
// checked against source n shows as plain text with no link to it.
export const citeMarker = "[\\[【［](\\d{1,3})[\\]】］]";

// citationParts splits an answer into text and citation parts; a marker [n] (or 【n】, ［n］) is a
// citation only when 1 <= n <= sourceCount (an invalid one stays plain text, never a link).
export function citationParts(text, sourceCount) {
  const parts = [];
  const re = new RegExp(citeMarker, "g");
  let last = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    const n = Number(m[1]);
    if (n < 1 || n > sourceCount) continue;
    if (m.index > last) parts.push({ text: text.slice(last, m.index) });
    parts.push({ cite: n });
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push({ text: text.slice(last) });
  return parts;
}
// safeHref returns the URL when it is an absolute http or https URL, else null: javascript:, data:,
// relative and malformed links are never made clickable.
export function safeHref(url) {
  let u;
  try { u = new URL(String(url).trim()); } catch { return null; }
  return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
}

// parseInline parses one line of markdown into inline nodes: {t:"text",v}, {t:"code",v}, {t:"strong",c},
// {t:"em",c}, {t:"link",href,c} (http/https only; any other target leaves the label as text), {t:"cite",n}
// (1 <= n <= sourceCount). An image is reduced to its alt text: the page never loads a remote image that
// a model or a document names (no exfiltration through image URLs).
export function parseInline(s, sourceCount = 0) {
  const out = [];
  const text = (v) => {
    if (!v) return;
    for (const p of citationParts(v, sourceCount)) {
      if (p.cite !== undefined) out.push({ t: "cite", n: p.cite });
      else if (out.length && out[out.length - 1].t === "text") out[out.length - 1].v += p.text;
      else out.push({ t: "text", v: p.text });
    }
  };
  const re = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|!\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)|\[([^\]]+)\]\(([^)\s]*)(?:\s+"[^"]*")?\)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|\*(?=[^\s*])([\s\S]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\w])/g;
  let last = 0;
  let m;
  while ((m = re.exec(s)) !== null) {
    text(s.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1]) out.push({ t: "code", v: m[2] });
    else if (m[3] !== undefined) text(m[3]);
    else if (m[5] !== undefined) {
      const href = safeHref(m[6]);
      if (href) out.push({ t: "link", href, c: parseInline(m[5], sourceCount) });
      else text(m[5]);
    } else if (m[7] !== undefined || m[8] !== undefined) out.push({ t: "strong", c: parseInline(m[7] ?? m[8], sourceCount) });
    else out.push({ t: "em", c: parseInline(m[9] ?? m[10], sourceCount) });
  }
  text(s.slice(last));
  return out;
}

export const tableRow = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map(c => c.trim());
export const isTableRule = (line) => /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(line);

// parseMarkdown parses the subset of markdown answers use into blocks: {type:"h",level,inl},
// {type:"p",inl}, {type:"ul"|"ol",items:[inl]}, {type:"code",text}, {type:"quote",inl},
// {type:"table",head:[inl],rows:[[inl]]}, {type:"hr"}. Raw HTML is not a construct: it stays text.
export function parseMarkdown(src, sourceCount = 0) {
  const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
  const blocks = [];
  const inl = (s) => parseInline(s, sourceCount);
  let para = [];
  const flush = () => { if (para.length) { blocks.push({ type: "p", inl: inl(para.join("\n")) }); para = []; } };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if ((m = /^\s*(```|~~~)/.exec(line))) {
      flush();
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) body.push(lines[i]);
      blocks.push({ type: "code", text: body.join("\n") });
    } else if (!line.trim()) {
      flush();
    } else if ((m = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      flush();
      blocks.push({ type: "h", level: m[1].length, inl: inl(m[2]) });
    } else if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      blocks.push({ type: "hr" });
    } else if (line.includes("|") && i + 1 < lines.length && isTableRule(lines[i + 1])) {
      flush();
      const head = tableRow(line).map(inl);
      const rows = [];
      for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim(); i++) rows.push(tableRow(lines[i]).map(inl));
      i--;
      blocks.push({ type: "table", head, rows });
    } else if ((m = /^\s*([-*+]|\d{1,3}[.)])\s+(.*)$/.exec(line))) {
      flush();
      const type = /\d/.test(m[1]) ? "ol" : "ul";
      const items = [inl(m[2])];
      for (; i + 1 < lines.length; i++) {
        const n = /^\s*([-*+]|\d{1,3}[.)])\s+(.*)$/.exec(lines[i + 1]);
        if (!n || (/\d/.test(n[1]) ? "ol" : "ul") !== type) break;
        items.push(inl(n[2]));
      }
      blocks.push({ type, items });
    } else if ((m = /^\s*>\s?(.*)$/.exec(line))) {
      flush();
      const q = [m[1]];
      for (; i + 1 < lines.length && /^\s*>/.test(lines[i + 1]); i++) q.push(lines[i + 1].replace(/^\s*>\s?/, ""));
      blocks.push({ type: "quote", inl: inl(q.join("\n")) });
    } else {
      para.push(line);
    }
  }
  flush();
  return blocks;
}

// plainText turns a markdown snippet (a passage of a document) into readable text: heading marks,
// table rules and pipes, emphasis and link syntax removed, whitespace collapsed.
export function plainText(md) {
  const flat = (nodes) => nodes.map(n => n.t === "text" || n.t === "code" ? n.v : n.t === "cite" ? `[${n.n}]` : flat(n.c)).join("");
  const out = [];
  for (const b of parseMarkdown(md)) {
    if (b.type === "p" || b.type === "h" || b.type === "quote") out.push(flat(b.inl));
    else if (b.type === "ul" || b.type === "ol") out.push(b.items.map(flat).join("; "));
    else if (b.type === "code") out.push(b.text);
    else if (b.type === "table") out.push([b.head, ...b.rows].map(r => r.map(flat).join(" · ")).join("; "));
  }
  // Snippets often arrive flattened to one line, where heading marks and table pipes are no longer at a
  // line start: remove them where they stand.
  return out.join(" ")
    .replace(/(^|\s)#{1,6}(?=\s)/g, "$1")
    .replace(/\|?(\s*:?-{3,}:?\s*\|)+/g, " ")
    .replace(/\s*\|\s*\|\s*/g, "; ")
    .replace(/^\s*\|\s*|\s*\|\s*$/g, "")
    .replace(/\s*\|\s*/g, " · ")
    .replace(/\s+/g, " ").trim();
}

// claimSkip says a character is left out when a claim is looked for in the rendered answer: whitespace
// (the answer's text is split around citation buttons and line breaks), markdown's emphasis and code
// marks (the claim's sentence is markdown, the rendered answer is not) and the "·" plainText puts between
// table cells (a rendered table has none), and "|" (a table row's, or one in prose, which the rendered
// text keeps while claimNeedle drops it).
export const claimSkip = (ch) => /\s|[*_`·|]/.test(ch);

// claimNeedle reduces a claim's sentence as the server states it (markdown, its [n] markers removed,
// with or without a space left before the final punctuation) to the characters to look for: its text
// without whitespace, emphasis marks and trailing punctuation. A cited table row ("| Managers | 45 |")
// loses its pipes first: its cells are separate text in the rendered table.
export function claimNeedle(sentence) {
  const s = plainText(String(sentence || "").replace(new RegExp("\\s*" + citeMarker, "g"), "").replace(/\|/g, " "));
  return [...s].filter(ch => !claimSkip(ch)).join("").replace(/[.,;:!?。，；：！？、…]+$/u, "");
}

// findClaim finds a claim's sentence in the answer's text segments (its text nodes in order, citation
// buttons left out), ignoring whitespace and trailing punctuation, from the after-th character looked
// at (the previous claim's next: claims come in the answer's order, and an earlier uncited sentence with
// the same text is not this one). It returns where the match starts and ends as [segment, offset] pairs
// (the end exclusive) and where the next claim's search starts, or null when it is not there or too
// short to mean anything.
export function findClaim(segments, sentence, after = 0) {
  const needle = claimNeedle(sentence);
  if ([...needle].length < 4) return null;
  let hay = "";
  const at = [];
  segments.forEach((seg, i) => {
    for (let j = 0; j < seg.length; j++) {
      if (claimSkip(seg[j])) continue;
      hay += seg[j];
      at.push([i, j]);
    }
  });
  const k = hay.indexOf(needle, after);
  if (k < 0) return null;
  const [ei, ej] = at[k + needle.length - 1];
  return { start: at[k], end: [ei, ej + 1], next: k + needle.length };
}

// liveLink returns the URL a markdown link in an answer may open, or null when it is to be shown as
// text: only http(s) URLs of this page's origin or of one of the answer's sources (web results) are
// live. Any other URL a model writes could carry what it read to a stranger's site (SEC-04).
export function liveLink(href, sources = [], origin = "") {
  const u = safeHref(href);
  if (!u) return null;
  if (origin && new URL(u).origin === origin) return u;
  return (sources || []).some(s => s && s.url && safeHref(s.url) === u) ? u : null;
}

// ---- markdown to DOM (text nodes only)

export function renderInline(parent, nodes, turn) {
  for (const n of nodes) {
    switch (n.t) {
      case "text": parent.append(document.createTextNode(n.v)); break;
      case "code": parent.append(el("code", "", n.v)); break;
      case "strong": case "em": { const e = el(n.t); renderInline(e, n.c, turn); parent.append(e); break; }
      case "link": {
        const href = liveLink(n.href, turn && turn.sources, location.origin);
        if (!href) {
          // not a source of this answer: the label and the address, as text; the address in its own
          // element, which answerTextNodes skips by class (a claim states the label only)
          const span = el("span", "offsite");
          renderInline(span, n.c, turn);
          span.append(el("span", "offsite-url", ` (${n.href})`));
          parent.append(span);
          break;
        }
        const a = el("a");
        a.href = href;
        a.rel = "noopener noreferrer nofollow";
        a.target = "_blank";
        renderInline(a, n.c, turn);
        parent.append(a);
        break;
      }
      case "cite": {
        const b = button(`[${n.n}]`, () => turn && turn.cite && turn.cite(n.n), "cite", `source ${n.n}`);
        parent.append(b);
        break;
      }
    }
  }
}

export function renderMarkdown(box, text, sourceCount, turn) {
  box.textContent = "";
  for (const b of parseMarkdown(text, sourceCount)) {
    let e;
    switch (b.type) {
      case "h": e = el(`h${Math.min(6, b.level + 2)}`); renderInline(e, b.inl, turn); break;
      case "p": e = el("p"); renderInline(e, b.inl, turn); break;
      case "quote": e = el("blockquote"); renderInline(e, b.inl, turn); break;
      case "code": e = el("pre"); e.append(el("code", "", b.text)); break;
      case "hr": e = el("hr"); break;
      case "ul": case "ol":
        e = el(b.type);
        for (const item of b.items) { const li = el("li"); renderInline(li, item, turn); e.append(li); }
        break;
      case "table": {
        e = el("table");
        const tr = el("tr");
        for (const c of b.head) { const th = el("th"); renderInline(th, c, turn); tr.append(th); }
        const thead = el("thead");
        thead.append(tr);
        const tbody = el("tbody");
        for (const row of b.rows) {
          const r = el("tr");
          for (const c of row) { const td = el("td"); renderInline(td, c, turn); r.append(td); }
          tbody.append(r);
        }
        e.append(thead, tbody);
        break;
      }
    }
    if (e) box.append(e);
  }
}
