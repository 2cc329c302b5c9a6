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

// GET `path`, or with `method` (and a JSON `body`) a write; the answer's JSON.
async function api(path, method = "GET", body = undefined) {
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) throw new Unauthorized("That token is not valid (or revoked).");
  const answer = await response.json();
  if (!response.ok) throw new Error(describe(answer));
  return answer;
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

// -- console actions: each through the API, as the user (provenance user_explicit) -----
function notify(message) {
  $("notice").textContent = message;
  $("error").textContent = "";
}

// A write to one memory of `m`'s instance; the list is read again after it.
async function changeMemory(m, path, method, body, done) {
  const url = `${path}?${query({ instance: m.namespace, provenance: "user_explicit" })}`;
  try {
    const answer = await api(url, method, body);
    reload();
    notify(done(answer));
  } catch (error) {
    report(error);
  }
}

function editMemory(row, m) {
  const box = el("textarea", { className: "edit-content", rows: 3, value: m.content });
  const editor = el("div", { className: "editor" }, [
    box,
    el("button", {
      type: "button",
      className: "act-save",
      textContent: "Save",
      onclick: () =>
        changeMemory(m, `/v1/memories/${m.id}`, "PATCH", { content: box.value }, (a) =>
          `Saved: memory ${a.memoryId} (version ${a.version}) replaces ${a.previousMemoryId}.`),
    }),
    el("button", { type: "button", textContent: "Cancel", onclick: () => editor.replaceWith(content) }),
  ]);
  const content = row.querySelector(".content");
  content.replaceWith(editor);
  box.focus();
}

function memoryActions(m) {
  const buttons = [];
  if (m.status === "active") {
    buttons.push(el("button", { type: "button", className: "act-edit", textContent: "Edit",
      onclick: (event) => editMemory(event.target.closest("li"), m) }));
  }
  if (m.status !== "forgotten") {
    const forget = el("button", { type: "button", className: "act-forget", textContent: "Forget" });
    forget.onclick = () => {
      if (!forget.dataset.armed) {  // a second click forgets
        forget.dataset.armed = "1";
        forget.textContent = "Forget it? Click again";
        return;
      }
      changeMemory(m, "/v1/memories/forget", "POST", { memory_id: m.id }, () =>
        `Forgotten: memory ${m.id} (purged by the next maintenance run).`);
    };
    buttons.push(forget);
    buttons.push(el("button", {
      type: "button",
      className: "act-private",
      textContent: m.private ? "Make visible" : "Make private",
      onclick: () =>
        changeMemory(m, "/v1/memories/mark-private", "POST", { memory_id: m.id, private: !m.private },
          () => m.private ? `Memory ${m.id} is visible again.`
            : `Memory ${m.id} is private: only its owner's main context shows it ` +
              "(list it with its user and \"private too\").",
        ),
    }));
  }
  return el("div", { className: "actions" }, buttons);
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
    ...(inSession ? [] : [memoryActions(m)]),
  ]);
}

function conflictSide(label, id, content, provenance, held) {
  return el("div", { className: `side${held ? " held" : ""}` }, [
    el("div", { className: "meta" }, [
      el("strong", { textContent: label }),
      el("span", { textContent: id === null ? "" : `memory ${id}` }),
      el("span", { textContent: provenance || "" }),
    ]),
    el("div", { className: "content", textContent: content === null ? "(gone)" : content }),
  ]);
}

function settle(c, keep) {
  const url = `/v1/conflicts/${c.quarantined_id}/settle?${query({ instance: c.namespace })}`;
  return async () => {
    try {
      const answer = await api(url, "POST", { keep });
      reload();
      notify(`Settled: memory ${answer.kept} stands; superseded ${answer.superseded.join(", ")}.`);
    } catch (error) {
      report(error);
    }
  };
}

function conflictRow(c) {
  return el("li", { className: "row conflict" }, [
    el("div", { className: "meta" }, [
      el("strong", { textContent: [c.subject, c.predicate].filter(Boolean).join(" · ") }),
      el("span", { textContent: c.namespace }),
      el("span", { textContent: when(c.created_at) }),
    ]),
    conflictSide("held back", c.quarantined_id, c.quarantined, c.quarantined_provenance, true),
    conflictSide("in force", c.active_id, c.active, c.active_provenance, false),
    el("div", { className: "actions" }, [
      el("button", { type: "button", className: "act-keep-new", textContent: "Keep held back",
        onclick: settle(c, "quarantined") }),
      el("button", { type: "button", className: "act-keep-current", textContent: "Keep in force",
        onclick: settle(c, "active") }),
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
      user_id: $("user-id").value.trim(),
      include_private: $("include-private").checked ? "true" : "",
    }),
    row: (m) => memoryRow(m),
  },
  conflicts: {
    path: "/v1/conflicts",
    params: () => ({}),
    row: conflictRow,
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
  $("notice").textContent = "";
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

const VIEWS = ["list-view", "session-view", "context-view", "status-view"];

function showOnly(view) {
  for (const id of VIEWS) $(id).hidden = id !== view;
  $("filters").hidden = view !== "list-view";
  $("error").textContent = "";
}

async function showSession(namespace, sessionId, messageId) {
  showOnly("session-view");
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

// -- context view: the block an agent would receive, each line with its why -----------
async function showContext(event) {
  if (event) event.preventDefault();
  const params = {
    instance: $("context-instance").value,
    seed_text: $("context-seed").value.trim(),
    user_id: $("context-user").value.trim(),
    channel: $("context-channel").value.trim(),
    max_tokens: $("context-tokens").value,
    explain: "true", // also what was left out; and a pending handoff is only peeked at
  };
  for (const id of ["context-block", "context-items", "context-excluded"]) $(id).replaceChildren();
  $("context-summary").textContent = "";
  try {
    const result = await api(`/v1/context?${query(params)}`);
    $("context-summary").textContent =
      `${result.items.length} lines, ${result.tokens_used} of ${params.max_tokens} tokens, ` +
      `topic ${result.topic}`;
    $("context-block").textContent = result.block || "(nothing to tell)";
    $("context-items").append(
      ...result.items.map((item) =>
        el("li", { className: "row context-item" }, [
          el("div", { className: "meta" }, [
            el("strong", { textContent: item.section }),
            el("span", { textContent: item.kind }),
            el("span", { textContent: `${item.tokens} tokens` }),
            el("span", { textContent: `score ${item.score.toFixed(2)}` }),
            el("span", { textContent: item.ref }),
          ]),
          el("div", { className: "content", textContent: item.text }),
          el("div", { className: "why", textContent: `why: ${item.why}` }),
        ]),
      ),
    );
    $("context-excluded").append(
      ...result.excluded.map((e) =>
        el("li", { className: "row excluded" }, [
          el("span", { className: "meta", textContent: `${e.ref} · ${e.kind}: ` }),
          el("span", { textContent: e.reason }),
        ]),
      ),
    );
  } catch (error) {
    report(error);
  }
}

// -- status view: the pipeline as this token may see it --------------------------------
function figures(pairs) {
  return el("dl", { className: "figures" }, pairs.flatMap(([name, value]) => [
    el("dt", { textContent: name }),
    el("dd", { textContent: String(value) }),
  ]));
}

function counts(map) {
  const parts = Object.entries(map).map(([name, n]) => `${name} ${n}`);
  return parts.length ? parts.join(", ") : "none";
}

function usageTable(rows) {
  const head = ["tenant", "model", "calls", "prompt tokens", "completion tokens", "ok",
    "repaired", "fallback", "errors", "timeouts", "avg ms"];
  return el("table", { className: "usage" }, [
    el("thead", {}, [el("tr", {}, head.map((h) => el("th", { textContent: h })))]),
    el("tbody", {}, rows.map((u) => el("tr", {}, [u.namespace, u.model, u.calls, u.prompt_tokens,
      u.completion_tokens, u.ok, u.repaired, u.fallback, u.errors, u.timeouts, u.latency_ms_avg]
      .map((v) => el("td", { textContent: String(v) }))))),
  ]);
}

async function showStatus() {
  $("status-tenant").replaceChildren();
  $("status-pipeline").replaceChildren();
  try {
    const { tenant, pipeline } = await api(`/v1/status?${query({ instance: $("instance").value })}`);
    $("status-when").textContent = `as of ${new Date().toLocaleTimeString()}`;
    const budgets = tenant.llm_budgets.map((b) =>
      `${b.namespace} ${b.used_today}${b.budget === null ? "" : ` of ${b.budget}`}` +
      (b.exhausted ? " (budget spent: deterministic path only)" : ""));
    $("status-tenant").append(
      el("h2", { textContent: `Your tenants: ${tenant.namespaces.join(", ")}` }),
      figures([
        ["embeddings pending", counts(tenant.embeddings_pending)],
        ["dead letters", tenant.dead_letters],
        ["open sync problems", counts(tenant.problems_open)],
        ["last sync", tenant.last_sync_at ? when(tenant.last_sync_at) : "never"],
        ["LLM tokens today", budgets.join("; ") || "none"],
      ]),
      el("h2", { textContent: `LLM usage since ${when(tenant.llm_since)}` }),
      tenant.llm.length ? usageTable(tenant.llm) : el("p", { className: "hint", textContent: "No LLM calls." }),
    );
    if (pipeline === null) {
      $("status-pipeline").append(el("p", { className: "hint", textContent:
        "Queues, unacked messages and the last sync run mix every tenant's work: an operator " +
        "token (continuum tokens create --ops) shows them." }));
      return;
    }
    const last = pipeline.last_sync;
    $("status-pipeline").append(
      el("h2", { textContent: "Pipeline (every tenant)" }),
      figures([
        ["queues", counts(pipeline.queues)],
        ["unacked", pipeline.unacked],
        ["embeddings pending", counts(pipeline.embeddings_pending)],
        ["dead letters", pipeline.dead_letters],
        ["secrets redacted", pipeline.secrets_redacted],
        ["last sync", last ? `${when(pipeline.last_sync_at)}: ${last.messages_inserted} new ` +
          `messages, ${last.files_read} files read, ${last.errors} problems` : "never"],
        ["open sync problems", counts(pipeline.problems_open)],
        ["state", pipeline.drained ? "drained" : "working"],
      ]),
    );
  } catch (error) {
    report(error);
  }
}

const PAGES = { context: "context-view", status: "status-view" };

function route() {
  const [view, ...parts] = location.hash.slice(1).split("/");
  if (view === "session" && parts.length >= 2) {
    const [namespace, sessionId, messageId] = parts.map(decodeURIComponent);
    showSession(namespace, sessionId, messageId);
    return;
  }
  showOnly(PAGES[state.tab] || "list-view");
  if (state.tab === "status") showStatus();
  else if (state.tab !== "context") reload();
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
    $("context-instance").replaceChildren(
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
  $("context-form").addEventListener("submit", showContext);
  $("status-refresh").addEventListener("click", showStatus);
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
