// A knowledge base's settings: the connectors that keep it in step with a web site, a Confluence space,
// a SharePoint or OneDrive folder or a Google Drive (GET/POST /api/kbs/{kb}/connectors, editors and
// owners). Each shows its status, last sync, counts and last error; forms add a web connector (URL and
// prefixes) or any type (its settings as JSON), and each connector can be synced now, dry-run (the
// action each item would get), checked and removed. Errors, item names and metadata come from the
// sources: untrusted, written as text only.

import { api, postJSON } from "./api.js";
import { $, el, button, confirmDialog } from "./dom.js";

const POLL_MS = 1500;
let open = null; // { kb, onChange, timer } while the settings are shown

// canManage says the caller may manage a knowledge base's connectors (editors and owners; the local
// single user owns every knowledge base).
export const canManage = (kb) => kb.role === "editor" || kb.role === "owner";

// webSettings builds a web connector's settings from the form: the start URL and the prefixes, one a
// line or separated by commas or spaces (none: the server's default, the URL up to its last "/").
export function webSettings(url, prefixes) {
  const s = { url: String(url || "").trim() };
  const list = String(prefixes || "").split(/[\s,]+/).filter(Boolean);
  if (list.length) s.prefixes = list;
  return s;
}

// parseSettings reads the settings textarea: {} when empty, else a JSON object; an Error naming the
// problem otherwise (the server validates the keys).
export function parseSettings(text) {
  const t = String(text || "").trim();
  if (!t) return {};
  let v;
  try { v = JSON.parse(t); } catch (err) { throw new Error(`Settings are not valid JSON: ${err.message}`); }
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error("Settings must be a JSON object, like {\"url\": \"https://…\"}.");
  return v;
}

// syncCounts summarises a sync's counts ("2 added · 1 updated · 0 deleted · 1 failed · 3 unchanged ·
// 12 requests"): a connector's progress or a dry run's result; "" when there are none.
export function syncCounts(p) {
  if (!p || typeof p !== "object") return "";
  const n = (k) => (typeof p[k] === "number" ? p[k] : Array.isArray(p[k]) ? p[k].length : 0);
  const parts = [`${n("added")} added`, `${n("updated")} updated`, `${n("deleted")} deleted`, `${n("failed")} failed`, `${n("unchanged")} unchanged`];
  if (typeof p.calls === "number") parts.push(`${p.calls} request${p.calls === 1 ? "" : "s"}`);
  return parts.join(" · ");
}

// syncProgress says how far a running sync is: "12 / 40 items · 3 pages listed" when the listing's
// total is known (on AWS the listing comes first, then its items), "12 items done" otherwise; "" for a
// sync that is not running or has no counts.
export function syncProgress(c) {
  const p = c && c.progress;
  if (!c || c.status !== "running" || !p || typeof p !== "object") return "";
  const num = (k) => (typeof p[k] === "number" && Number.isFinite(p[k]) ? p[k] : null);
  const done = num("done") ?? 0, total = num("total"), pages = num("pages");
  const parts = [total !== null ? `${done} / ${total} item${total === 1 ? "" : "s"}` : `${done} item${done === 1 ? "" : "s"} done`];
  if (pages !== null) parts.push(`${pages} page${pages === 1 ? "" : "s"} listed`);
  return parts.join(" · ");
}

// enforcesPermissions reads a connector's enforce_permissions setting: on unless it is false.
export const enforcesPermissions = (c) => !(c && c.settings && c.settings.enforce_permissions === false);

// permissionsText says whether a connector's documents keep the source's permissions
// (docs/connectors.md, "Permissions"). The setting is chosen when the connector is added: PATCH
// changes only the schedule, so the list shows it read-only.
export function permissionsText(c) {
  return enforcesPermissions(c)
    ? "source permissions enforced: a document is read only by those its source lets read it"
    : "source permissions not enforced: every reader of the knowledge base reads its documents";
}

// withEnforce applies the form's "Enforce the source's permissions" box to a connector's settings:
// unticked adds "enforce_permissions": false; a value the settings JSON gives itself wins.
export function withEnforce(settings, enforce) {
  if (enforce || Object.hasOwn(settings, "enforce_permissions")) return settings;
  return { ...settings, enforce_permissions: false };
}

// lastSync says when a connector last finished a sync, or that it never did.
export function lastSync(c) {
  if (c.status === "running") return c.started_at ? `syncing since ${when(c.started_at)}` : "syncing";
  return c.finished_at ? `last sync ${when(c.finished_at)}` : "never synced";
}

const when = (t) => { const d = new Date(t); return isNaN(d) ? String(t) : d.toLocaleString(); };

// settingsSummary is the one line that says what a connector reads: its URL, space, site, folder...
export function settingsSummary(c) {
  const s = c.settings && typeof c.settings === "object" ? c.settings : {};
  const keys = ["url", "space", "site_id", "drive_id", "user", "folder", "folder_id"];
  const parts = keys.filter(k => typeof s[k] === "string" && s[k]).map(k => `${k} ${s[k]}`);
  if (Array.isArray(s.prefixes) && s.prefixes.length) parts.push(`prefixes ${s.prefixes.join(", ")}`);
  if (c.credentials && c.credentials !== "none") parts.push(`credentials from a ${c.credentials === "variables" ? "server variable" : c.credentials}`);
  return parts.join(" · ");
}

const base = (kb) => `/api/kbs/${encodeURIComponent(kb.id || kb.name)}/connectors`;

// openConnectors shows a knowledge base's settings in the Knowledge bases view; onChange is called
// when a sync ends or a connector is removed (its documents changed).
export function openConnectors(kb, onChange = () => {}) {
  closeConnectors();
  open = { kb, onChange, timer: 0 };
  const card = el("section", "card wide");
  card.id = "kb-settings";
  card.setAttribute("aria-labelledby", "conn-h");
  const h = el("h2", "", `Connectors of ${kb.name}`);
  h.id = "conn-h";
  h.tabIndex = -1;
  const head = el("div", "conn-head");
  head.append(h, button("Close", closeConnectors, "link", "Close the connectors"));
  const hint = el("p", "hint", "A connector keeps this knowledge base in step with a web site, a Confluence space, a SharePoint or OneDrive folder or a Google Drive: pages added, changed or deleted there are added, re-indexed or deleted here at each sync.");
  const list = el("ul", "list conn-list");
  list.id = "conn-list";
  list.setAttribute("aria-label", `Connectors of ${kb.name}`);
  const msg = el("p", "msg");
  msg.id = "conn-msg";
  msg.setAttribute("role", "status");
  const dry = el("div", "conn-dry");
  dry.id = "conn-dry";
  dry.setAttribute("aria-live", "polite");
  card.append(head, hint, list, msg, dry, webForm(kb), otherForm(kb));
  const cards = $("kb-view").querySelector(".cards");
  cards.insertBefore(card, cards.children[1] || null);
  h.focus();
  card.scrollIntoView({ block: "start" });
  loadConnectors();
}

export function closeConnectors() {
  if (!open) return;
  clearTimeout(open.timer);
  open = null;
  const card = $("kb-settings");
  if (card) card.remove();
}

function say(text, isError = false) {
  const m = $("conn-msg");
  if (!m) return;
  m.textContent = text;
  m.classList.toggle("error", isError);
}

// loadConnectors lists the open knowledge base's connectors, and polls while a sync runs.
async function loadConnectors() {
  const cur = open;
  if (!cur) return;
  clearTimeout(cur.timer);
  let out;
  try {
    out = await api(base(cur.kb));
  } catch (err) {
    if (open === cur) say(`Connectors could not be listed: ${err.message}`, true);
    return;
  }
  if (open !== cur) return;
  const running = out.connectors.some(c => c.status === "running");
  if (cur.running && !running) cur.onChange(); // a sync ended: the documents changed
  cur.running = running;
  renderConnectors(out.connectors);
  if (running) cur.timer = setTimeout(loadConnectors, POLL_MS);
}

function renderConnectors(list) {
  const ul = $("conn-list");
  ul.textContent = "";
  if (!list.length) {
    ul.append(el("li", "hint", "No connectors yet: add one below."));
    return;
  }
  for (const c of list) {
    const li = el("li", "conn");
    li.dataset.connector = c.name;
    const top = el("div", "conn-top");
    top.append(el("strong", "conn-name", c.name), el("span", "conn-type", c.type), el("span", `status ${c.status}`, c.status));
    li.append(top);
    const summary = settingsSummary(c);
    if (summary) li.append(el("span", "sub", summary));
    li.append(el("span", `sub conn-perms${enforcesPermissions(c) ? "" : " off"}`, permissionsText(c)));
    li.append(el("span", "sub conn-last", lastSync(c)));
    const progress = syncProgress(c);
    if (progress) li.append(el("span", "sub conn-progress", progress));
    const counts = syncCounts(c.progress);
    if (counts) li.append(el("span", "sub conn-counts", counts));
    if (c.last_error) li.append(el("span", "sub error conn-error", c.last_error));
    const actions = el("div", "conn-actions");
    const sync = button("Sync now", () => syncNow(c, sync), "", `Sync ${c.name} now`);
    sync.disabled = c.status === "running";
    actions.append(sync,
      button("Dry run", () => dryRun(c), "", `Dry run of ${c.name}`),
      button("Check", () => check(c), "", `Check ${c.name}`),
      button("Remove", () => remove(c), "", `Remove ${c.name}`));
    actions.append(intervalPicker(c));
    li.append(actions);
    ul.append(li);
  }
}

// INTERVALS are the schedule's choices; a connector's own other value (set through the API) is kept.
export const INTERVALS = ["default", "15m", "1h", "6h", "24h", "off"];

// intervalChoices lists the picker's options for a connector's current interval, its own first when
// it is not one of INTERVALS.
export function intervalChoices(current) {
  return INTERVALS.includes(current) || !current ? INTERVALS : [current, ...INTERVALS];
}

const intervalText = (v) => (v === "default" ? "server default" : v === "off" ? "off (by hand only)" : `every ${v}`);

// intervalPicker changes how often the schedule syncs the connector (PATCH, audited).
function intervalPicker(c) {
  const l = el("label", "conn-every", "Schedule ");
  const sel = el("select");
  sel.setAttribute("aria-label", `Schedule of ${c.name}`);
  for (const v of intervalChoices(c.interval)) { const o = el("option", "", intervalText(v)); o.value = v; sel.append(o); }
  sel.value = c.interval || "default";
  sel.onchange = async () => {
    const cur = open;
    try {
      await api(`${base(cur.kb)}/${encodeURIComponent(c.name)}`, { method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ interval: sel.value }) });
      say(`${c.name} syncs ${sel.value === "default" ? "on the server's default schedule" : sel.value === "off" ? "only by hand" : `every ${sel.value}`}.`);
    } catch (err) {
      say(`Schedule not changed: ${err.message}`, true);
    }
    loadConnectors();
  };
  l.append(sel);
  return l;
}

async function syncNow(c, b) {
  b.disabled = true;
  const cur = open;
  try {
    await api(`${base(cur.kb)}/${encodeURIComponent(c.name)}/sync`, { method: "POST" });
    // started (202): its end refreshes the documents even when it ends before the first poll sees it run
    cur.running = true;
    say(`Syncing ${c.name}…`);
  } catch (err) {
    say(`Not synced: ${err.message}`, true);
  }
  loadConnectors();
}

async function dryRun(c) {
  const box = $("conn-dry");
  box.textContent = "";
  say(`Dry run of ${c.name}: listing and fetching, nothing is changed…`);
  let r;
  try {
    r = await postJSON(`${base(open.kb)}/${encodeURIComponent(c.name)}/sync`, { dry_run: true });
  } catch (err) {
    say(`Dry run failed: ${err.message}`, true);
    return;
  }
  say("");
  const h = el("h3", "", `Dry run of ${c.name}: ${syncCounts(r)}`);
  box.append(h, button("Close", () => { box.textContent = ""; }, "link", "Close the dry run"));
  const items = Array.isArray(r.items) ? r.items : [];
  if (!items.length) { box.append(el("p", "hint", "Nothing would change.")); return; }
  const wrap = el("div", "tablewrap");
  const t = el("table", "conn-items");
  const head = el("tr");
  for (const name of ["Action", "Item", "Id"]) { const th = el("th", "", name); th.scope = "col"; head.append(th); }
  t.append(el("thead"), el("tbody"));
  t.tHead.append(head);
  for (const it of items) {
    const tr = el("tr");
    tr.append(el("td", `act ${it.action}`, it.action), el("td", "", it.name || ""), el("td", "conn-id", it.id));
    t.tBodies[0].append(tr);
  }
  wrap.append(t);
  box.append(wrap);
  const failed = Array.isArray(r.failed) ? r.failed : [];
  for (const f of failed) box.append(el("p", "sub error", `${f.id}: ${f.error}`));
}

async function check(c) {
  say(`Checking ${c.name}…`);
  try {
    const r = await api(`${base(open.kb)}/${encodeURIComponent(c.name)}/check`, { method: "POST" });
    if (r.ok) say(`${c.name} answers with its settings and credentials.`);
    else say(`${c.name} does not answer: ${r.error && r.error.message}`, true);
  } catch (err) {
    say(`Not checked: ${err.message}`, true);
  }
}

async function remove(c) {
  if (!(await confirmDialog(`Remove the connector “${c.name}” and delete every document it added to ${open.kb.name}?`, "Remove"))) return;
  const cur = open;
  try {
    const r = await api(`${base(cur.kb)}/${encodeURIComponent(c.name)}`, { method: "DELETE" });
    say(`Removed ${c.name}; ${r.deleted} document${r.deleted === 1 ? "" : "s"} deleted.`);
    cur.onChange();
  } catch (err) {
    say(`Not removed: ${err.message}`, true);
  }
  loadConnectors();
}

// add sends a new connector; the server validates its settings and asks the source once.
async function add(form, body) {
  const b = form.querySelector("button[type=submit]");
  b.disabled = true;
  say(`Adding ${body.name}…`);
  try {
    await postJSON(base(open.kb), body);
    say(`Added ${body.name}. Sync it now to fill the knowledge base.`);
    form.reset();
  } catch (err) {
    say(`Not added: ${err.message}`, true);
  } finally {
    b.disabled = false;
  }
  loadConnectors();
}

function field(label, input) {
  const l = el("label", "", label);
  l.append(input);
  return l;
}

function input(id, attrs = {}) {
  const i = el("input");
  i.id = id;
  i.autocomplete = "off";
  for (const [k, v] of Object.entries(attrs)) i.setAttribute(k, v);
  return i;
}

function webForm(kb) {
  const f = el("form", "row conn-form");
  f.id = "conn-web";
  f.setAttribute("aria-label", `Add a web site to ${kb.name}`);
  const name = input("conn-web-name", { required: "", maxlength: "64", pattern: "[A-Za-z0-9][A-Za-z0-9_\\-]*" });
  const url = input("conn-web-url", { type: "url", required: "", placeholder: "https://docs.example.com/handbook/" });
  const prefixes = el("textarea");
  prefixes.id = "conn-web-prefixes";
  prefixes.rows = 2;
  prefixes.placeholder = "Only under these (default: the URL's folder), one a line";
  const go = el("button", "primary", "Add web site");
  go.type = "submit";
  f.append(el("h3", "", "Add a web site"), field("Name", name), field("Start URL", url), field("Prefixes (optional)", prefixes), go);
  f.onsubmit = (e) => {
    e.preventDefault();
    add(f, { name: name.value.trim(), type: "web", settings: webSettings(url.value, prefixes.value) });
  };
  return f;
}

function otherForm(kb) {
  const d = el("details", "conn-other");
  d.append(el("summary", "", "Add another type (Confluence, SharePoint, Google Drive)"));
  const f = el("form", "row conn-form");
  f.id = "conn-any";
  f.setAttribute("aria-label", `Add a connector to ${kb.name}`);
  const type = el("select");
  type.id = "conn-any-type";
  for (const t of ["confluence", "sharepoint", "gdrive", "web"]) { const o = el("option", "", t); o.value = t; type.append(o); }
  const name = input("conn-any-name", { required: "", maxlength: "64", pattern: "[A-Za-z0-9][A-Za-z0-9_\\-]*" });
  const settings = el("textarea");
  settings.id = "conn-any-settings";
  settings.rows = 5;
  settings.spellcheck = false;
  settings.placeholder = '{"url": "https://acme.atlassian.net/wiki", "space": "ENG", "credentials_file": "wiki.json"}';
  const checkBox = input("conn-any-check", { type: "checkbox", checked: "" });
  const checkLabel = el("label", "inline", "");
  checkLabel.append(checkBox, document.createTextNode(" Check that the source answers"));
  const enforceBox = input("conn-any-enforce", { type: "checkbox", checked: "" });
  const enforceLabel = el("label", "inline", "");
  enforceLabel.append(enforceBox, document.createTextNode(" Enforce the source's permissions (fixed once added)"));
  const go = el("button", "primary", "Add connector");
  go.type = "submit";
  const note = el("p", "hint", "Settings are the connector's JSON (docs/connectors.md). Credentials are never typed here: name a file an operator put in this knowledge base's credentials folder with \"credentials_file\".");
  f.append(field("Type", type), field("Name", name), field("Settings (JSON)", settings), checkLabel, enforceLabel, go, note);
  f.onsubmit = (e) => {
    e.preventDefault();
    let s;
    try { s = parseSettings(settings.value); } catch (err) { say(err.message, true); return; }
    add(f, { name: name.value.trim(), type: type.value, settings: withEnforce(s, enforceBox.checked), check: checkBox.checked });
  };
  d.append(f);
  return d;
}
