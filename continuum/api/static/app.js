// Mission Control (R78): vanilla JS over the JSON API (docs/api.md); no build step.
// Data is always rendered with textContent, never as HTML.
"use strict";

const TOKEN_KEY = "continuum.token";
const PAGE_SIZE = 50;
const SESSION_MESSAGES_MAX = 2000;
const $ = (id) => document.getElementById(id);

// -- helpers ------------------------------------------------------------------------
function el(tag, props = {}, children = []) {
  const node = Object.assign(document.createElement(tag), props);
  for (const child of children) node.append(child);
  return node;
}

function when(iso) {
  return iso ? iso.replace("T", " ").slice(0, 16) : "";
}

function describe(body) {
  if (Array.isArray(body.detail)) {
    return body.detail.map((e) => `${e.loc.join(".")}: ${e.msg}`).join("; ");
  }
  return String(body.detail || "request failed");
}

function nextDay(dateText) {
  const day = new Date(`${dateText}T00:00:00Z`);
  day.setUTCDate(day.getUTCDate() + 1);
  return day.toISOString().slice(0, 10);
}

function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== "" && value !== null && value !== undefined) search.set(name, value);
  }
  return search.toString();
}

// -- auth ---------------------------------------------------------------------------
function takeTokenFromUrl() {
  const token =
    new URLSearchParams(location.hash.slice(1)).get("token") ||
    new URLSearchParams(location.search).get("token");
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    history.replaceState(null, "", location.pathname);
  }
}

class Unauthorized extends Error {}

async function api(path) {
  const response = await fetch(path, {
    headers: { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` },
  });
  if (response.status === 401) throw new Unauthorized("That token is not valid (or revoked).");
  const body = await response.json();
  if (!response.ok) throw new Error(describe(body));
  return body;
}

function showLogin(message = "") {
  sessionStorage.removeItem(TOKEN_KEY);
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message;
}

function report(error) {
  if (error instanceof Unauthorized) showLogin(error.message);
  else $("error").textContent = error.message;
}

// -- rows ---------------------------------------------------------------------------
function sessionLink(namespace, sessionId, messageId = "") {
  const target = [namespace, sessionId, messageId].map(encodeURIComponent).join("/");
  return el("a", { href: `#session/${target}`, textContent: sessionId });
}

function messageRow(m, inSession = false) {
  const meta = [el("span", { className: "who", textContent: m.role }), when(m.created_at)];
  if (!inSession) meta.push(m.namespace, m.channel || "", sessionLink(m.namespace, m.session_id));
  return el("li", { className: `row role-${m.role}`, id: inSession ? `msg-${m.message_id}` : "" }, [
    el("div", { className: "meta" }, meta.map((part) => (typeof part === "string" ? el("span", { textContent: part }) : part))),
    el("div", { className: "content", textContent: m.content }),
  ]);
}

function cronRow(r) {
  return el("li", { className: "row cron" }, [
    el("div", { className: "meta" }, [
      el("strong", { textContent: r.cron_name }),
      el("span", { textContent: when(r.event_at) }),
      el("span", { textContent: r.namespace }),
      sessionLink(r.namespace, r.session_id),
    ]),
    el("div", { className: "content", textContent: r.summary }),
  ]);
}

function memoryRow(m, inSession = false) {
  const sources = m.source_message_ids.map((id) =>
    inSession
      ? el("a", { href: "#", textContent: id, onclick: (e) => (e.preventDefault(), highlight(id)) })
      : m.session_id
        ? Object.assign(sessionLink(m.namespace, m.session_id, id), { textContent: id })
        : el("span", { textContent: id }),
  );
  return el("li", { className: "row memory" }, [
    el("div", { className: "meta" }, [
      el("strong", { textContent: m.kind }),
      el("span", { textContent: `importance ${m.importance}` }),
      el("span", { textContent: m.status }),
      el("span", { textContent: m.provenance }),
      el("span", { textContent: when(m.created_at) }),
      ...(m.private ? [el("span", { textContent: "private" })] : []),
    ]),
    el("div", { className: "content", textContent: m.content }),
    el("div", { className: "meta" }, [
      ...m.tags.map((tag) => el("span", { className: "tag", textContent: tag })),
      ...(sources.length ? [el("span", { textContent: "source turns:" }), ...sources] : []),
    ]),
  ]);
}

// Where a sync problem is: file:line (byte n), store [session#seq], or the whole file.
function problemPlace(p) {
  if (p.seq !== null) return `${p.source_path} [${p.session_id}#${p.seq}]`;
  if (p.line_no !== null) return `${p.source_path}:${p.line_no} (byte ${p.byte_offset})`;
  return p.source_path;
}

function problemRow(p) {
  return el("li", { className: "row problem" }, [
    el("div", { className: "meta" }, [
      el("strong", { textContent: p.kind }),
      el("span", { textContent: p.namespace }),
      el("span", { textContent: `seen ${when(p.first_seen_at)} – ${when(p.last_seen_at)}` }),
      ...(p.resolved_at ? [el("span", { textContent: `resolved ${when(p.resolved_at)}` })] : []),
    ]),
    el("div", { className: "place", textContent: problemPlace(p) }),
    el("div", { className: "content", textContent: p.detail }),
  ]);
}

// -- list view with infinite scroll -------------------------------------------------
const TABS = {
  conversations: {
    path: "/v1/messages",
    params: () => ({ role: $("role").value }),
    row: (m) => messageRow(m),
  },
  cron: {
    path: "/v1/cron-reports",
    params: () => ({ cron_name: $("cron-name").value }),
    row: cronRow,
  },
  memories: {
    path: "/v1/memories",
    params: () => ({
      kind: $("kind").value,
      status: $("status").value,
      min_importance: $("min-importance").value,
    }),
    row: (m) => memoryRow(m),
  },
  problems: {
    path: "/v1/sync/problems",
    params: () => ({ resolved: $("resolved").checked ? "true" : "" }),
    row: problemRow,
  },
};

const state = { tab: "conversations", next: null, loading: false, generation: 0, shown: 0 };

function firstPageUrl() {
  const tab = TABS[state.tab];
  const since = $("since").value;
  const until = $("until").value;
  return `${tab.path}?${query({
    q: $("q").value.trim(),
    instance: $("instance").value,
    since,
    until: until && nextDay(until),
    limit: PAGE_SIZE,
    ...tab.params(),
  })}`;
}

function sentinelVisible() {
  return $("sentinel").getBoundingClientRect().top <= window.innerHeight;
}

async function loadMore() {
  if (state.loading || !state.next) return;
  state.loading = true;
  const generation = state.generation;
  try {
    const page = await api(state.next);
    if (generation !== state.generation) return; // filters changed meanwhile
    const row = TABS[state.tab].row;
    $("results").append(...page.items.map(row));
    state.shown += page.items.length;
    state.next = page.next;
    $("summary").textContent = `${state.shown} shown${page.next ? ", scroll for more" : ""}`;
    $("end").hidden = Boolean(page.next);
  } catch (error) {
    report(error);
    state.next = null;
  } finally {
    if (generation === state.generation) state.loading = false;
  }
  if (generation === state.generation && state.next && sentinelVisible()) loadMore();
}

function reload() {
  state.generation += 1;
  state.loading = false;
  state.next = firstPageUrl();
  state.shown = 0;
  $("results").replaceChildren();
  $("error").textContent = "";
  $("end").hidden = true;
  loadMore();
}

function selectTab(name) {
  state.tab = name;
  for (const button of document.querySelectorAll("[role=tab]")) {
    button.setAttribute("aria-selected", String(button.dataset.tab === name));
  }
  for (const label of document.querySelectorAll("#filters [data-for]")) {
    label.hidden = label.dataset.for !== name;
  }
}

// -- session view: the conversation beside its memories -----------------------------
function highlight(messageId) {
  for (const row of document.querySelectorAll("#session-messages .highlight")) {
    row.classList.remove("highlight");
  }
  const row = document.getElementById(`msg-${messageId}`);
  if (row) {
    row.classList.add("highlight");
    row.scrollIntoView({ block: "center" });
  }
}

async function showSession(namespace, sessionId, messageId) {
  $("list-view").hidden = true;
  $("filters").hidden = true;
  $("session-view").hidden = false;
  $("session-messages").replaceChildren();
  $("session-memories").replaceChildren();
  const scope = { instance: namespace, session_id: sessionId };
  try {
    const session = await api(`/v1/sessions/${encodeURIComponent(sessionId)}?${query({ instance: namespace })}`);
    $("session-title").textContent =
      `${session.namespace} · ${session.session_id} · ${session.channel || session.source} · ` +
      `${when(session.started_at)} · ${session.message_count} messages`;
    const memories = await api(`/v1/memories?${query({ ...scope, status: "any", limit: 200 })}`);
    $("session-memories").append(...memories.items.map((m) => memoryRow(m, true)));
    let next = `/v1/messages?${query({ ...scope, order: "oldest", limit: 200 })}`;
    let shown = 0;
    while (next && shown < SESSION_MESSAGES_MAX) {
      const page = await api(next);
      $("session-messages").append(...page.items.map((m) => messageRow(m, true)));
      shown += page.items.length;
      next = page.next;
    }
    if (messageId) highlight(messageId);
  } catch (error) {
    report(error);
  }
}

function route() {
  const [view, ...parts] = location.hash.slice(1).split("/");
  if (view === "session" && parts.length >= 2) {
    const [namespace, sessionId, messageId] = parts.map(decodeURIComponent);
    showSession(namespace, sessionId, messageId);
    return;
  }
  $("session-view").hidden = true;
  $("filters").hidden = false;
  $("list-view").hidden = false;
  reload();
}

// -- start --------------------------------------------------------------------------
async function start() {
  try {
    const me = await api("/v1/me");
    $("who").textContent = `${me.name} · ${me.namespaces.join(", ")}`;
    $("instance").replaceChildren(
      el("option", { value: "", textContent: "all" }),
      ...me.namespaces.map((ns) => el("option", { value: ns, textContent: ns })),
    );
    const names = await api("/v1/cron-reports/names");
    $("cron-name").append(...names.map((name) => el("option", { value: name, textContent: name })));
    const kinds = await api("/v1/memories/kinds");
    $("kind").replaceChildren(
      el("option", { value: "", textContent: "any" }),
      ...kinds.map((k) => el("option", { value: k.kind, textContent: k.kind, title: k.description })),
    );
  } catch (error) {
    report(error);
    return;
  }
  $("login").hidden = true;
  $("app").hidden = false;
  selectTab("conversations");
  route();
}

function wire() {
  let typing;
  $("q").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(reload, 250);
  });
  $("filters").addEventListener("change", (event) => event.target.id !== "q" && reload());
  $("filters").addEventListener("submit", (event) => (event.preventDefault(), reload()));
  for (const button of document.querySelectorAll("[role=tab]")) {
    button.addEventListener("click", () => {
      selectTab(button.dataset.tab);
      if (location.hash) location.hash = ""; // hashchange shows the list
      else route();
    });
  }
  $("back").addEventListener("click", (event) => {
    event.preventDefault();
    location.hash = "";
  });
  $("logout").addEventListener("click", () => showLogin());
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
    start();
  });
  window.addEventListener("hashchange", route);
  new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && loadMore()).observe(
    $("sentinel"),
  );
}

wire();
takeTokenFromUrl();
if (sessionStorage.getItem(TOKEN_KEY)) start();
else showLogin();
