// stint dashboard: plain JavaScript, no build step. Each page is a render
// function of JSON from ./api/, redrawn every 2 seconds (live updates
// without reloading). The token stays in this tab's sessionStorage.
"use strict";

const $ = (sel) => document.querySelector(sel);
let me = null;        // whoami: role, tenant, can_cancel, can_replay
let timer = null;
const still = new Set(); // pages drawn on navigation and after actions only

// A token in the address (#token=...) is taken once, then dropped from it.
(function takeTokenFromAddress() {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    sessionStorage.setItem("stint-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + "#/queues");
  }
})();

async function api(path, opts = {}) {
  const headers = Object.assign({ "Accept": "application/json" }, opts.headers || {});
  const token = sessionStorage.getItem("stint-token");
  if (token) headers["Authorization"] = "Bearer " + token;
  const res = await fetch("api/" + path, Object.assign({}, opts, { headers }));
  const body = await res.json().catch(() => ({}));
  if (res.status === 401 || res.status === 403 && path === "whoami") {
    showLogin(body.error || res.statusText);
    throw new Error(body.error || res.statusText);
  }
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
const state = (s) => `<span class="state state-${esc(s)}">${esc(s)}</span>`;
const time = (t) => (t ? new Date(t).toLocaleTimeString() : "");
const jobLink = (id) => `<a href="#/job/${encodeURIComponent(id)}" data-testid="job-link">${esc(id)}</a>`;

function showLogin(msg) {
  $("#login").hidden = false;
  $("#login-error").textContent = msg || "";
  $("#main").innerHTML = "";
  $("#filters").hidden = true;
  me = null;
}

$("#login-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem("stint-token", $("#token").value.trim());
  start();
});

$("#main").addEventListener("submit", (e) => {
  if (e.target.id !== "history-form") return;
  e.preventDefault();
  const p = new URLSearchParams({ window: e.target.dataset.window });
  const q = new FormData(e.target).get("queue");
  if (q) p.set("queue", q);
  location.hash = "#/history?" + p;
});

$("#filter-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const params = new URLSearchParams();
  for (const [k, v] of new FormData(e.target)) if (v) params.set(k, v);
  location.hash = "#/jobs?" + params.toString();
});

function route() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const [page, ...rest] = path.split("/");
  return { page: page || "queues", arg: decodeURIComponent(rest.join("/")), params: new URLSearchParams(query || "") };
}

const pages = {
  async queues() {
    const r = await api("queues");
    const names = Object.keys(r.queues).sort();
    const rows = names.map((q) => {
      const x = r.queues[q];
      const states = Object.entries(x.states).map(([s, n]) => `${state(s)} ${n}`).join(" ");
      return `<tr data-testid="queue-row"><td><a href="#/jobs?queue=${encodeURIComponent(q)}">${esc(q)}</a></td>
        <td class="num">${x.backlog}</td><td class="num">${x.running}</td><td class="num">${x.scheduled}</td>
        <td class="num">${x.dead_lettered}</td><td class="num">${x.oldest_age_seconds.toFixed(1)}s</td>
        <td class="num" data-testid="throughput">${(x.throughput * 60).toFixed(1)}/min</td><td>${states}</td></tr>`;
    }).join("");
    const flow = await api("flow");
    return `<h2>Queues</h2>
      <p>Counted at ${time(r.at)}${r.truncated ? " (partial count)" : ""}. Backlog ${r.backlog}, running ${r.running},
      dead letters ${r.dead_lettered}${r.capacity ? `, this process's workers ${(r.utilisation * 100).toFixed(0)}% busy of ${r.capacity}` : ""}.</p>
      <table data-testid="queues"><tr><th>Queue</th><th>Backlog</th><th>Running</th><th>Scheduled</th><th>Dead</th><th>Oldest wait</th><th>Throughput</th><th>By state</th></tr>
      ${rows || `<tr><td colspan="8">No live jobs.</td></tr>`}</table>
      ${flowTable(flow, r)}`;
  },

  // History at a glance: outcomes per minute, queue depth, pickup latency
  // and run time over the last hour or day, from the job events the server
  // reads and caches in the background.
  async history(_, params) {
    const win = params.get("window") === "day" ? "day" : "hour";
    const queue = params.get("queue") || "";
    const r = await api(`history?window=${win}&queue=${encodeURIComponent(queue)}`);
    const link = (w, label) => {
      const p = new URLSearchParams({ window: w });
      if (queue) p.set("queue", queue);
      return `<a href="#/history?${p}" ${w === win ? `aria-current="page" class="current"` : ""} data-testid="window-${w}">${label}</a>`;
    };
    const options = [`<option value="">all queues</option>`, ...r.queues.map((q) => `<option ${q === queue ? "selected" : ""}>${esc(q)}</option>`)].join("");
    const per = r.step_seconds === 60 ? "per minute" : `per minute, averaged over ${r.step_seconds / 60} minutes`;
    const t = r.totals;
    return `<h2>History${queue ? ` of <span data-testid="history-queue">${esc(queue)}</span>` : ""}</h2>
      <form id="history-form" class="inline" data-window="${win}">
        <span class="tabs">${link("hour", "Last hour")} ${link("day", "Last day")}</span>
        <label>Queue <select name="queue">${options}</select></label> <button type="submit">Show</button>
      </form>
      <p data-testid="history-totals">Over the last ${win}: <strong>${t.succeeded}</strong> succeeded, <strong>${t.failed}</strong> failed attempts,
        <strong>${t.dead_lettered}</strong> dead-lettered. Read from the job events at ${time(r.at)}.</p>
      <div class="charts">
      ${charts.bars({ title: `Outcomes (${per})`, times: r.times, unit: "/min", series: [
        { name: "succeeded", values: r.succeeded, colour: "#2e7d32" },
        { name: "failed", values: r.failed, colour: "#ef6c00" },
        { name: "dead-lettered", values: r.dead_lettered, colour: "#c62828" }] })}
      ${charts.lines({ title: "Queue depth (queued jobs)", times: r.times, fmt: (v) => +v.toFixed(1), series: [
        { name: "queued", values: r.depth, colour: "#1565c0" }] })}
      ${charts.lines({ title: "Pickup latency (queued to claimed)", times: r.times, fmt: charts.ms, series: [
        { name: "p50", values: r.pickup_p50, colour: "#6a1b9a" }, { name: "p99", values: r.pickup_p99, colour: "#6a1b9a", dash: true }] })}
      ${charts.lines({ title: "Run time (started to ended)", times: r.times, fmt: charts.ms, series: [
        { name: "p50", values: r.run_p50, colour: "#00695c" }, { name: "p99", values: r.run_p99, colour: "#00695c", dash: true }] })}
      </div>
      <p class="note">Latencies are read from histogram buckets (1, 2, 5 × each power of ten): a percentile shows its bucket's upper bound.</p>`;
  },

  async jobs(_, params) {
    $("#filters").hidden = false;
    const form = $("#filter-form");
    // The form shows the address's filters when the address changes, never
    // on a timed redraw: a filter being chosen is not undone.
    if (form.dataset.shown !== location.hash) {
      form.dataset.shown = location.hash;
      for (const el of form.elements) if (el.name) el.value = params.get(el.name) || "";
    }
    const r = await api("jobs?" + params.toString());
    const rows = r.jobs.map((j) => `<tr data-testid="job-row"><td>${jobLink(j.id)}</td><td>${state(j.state)}</td>
      <td>${esc(j.queue)}</td><td>${esc(j.kind)}</td><td>${esc(j.tenant || "default")}</td><td class="num">${j.attempt}/${j.max_attempts}</td>
      <td>${time(j.updated_at)}</td></tr>`).join("");
    const next = new URLSearchParams(params);
    next.set("after", r.next || "");
    return `<h2>Jobs</h2>
      <table data-testid="jobs"><tr><th>Id</th><th>State</th><th>Queue</th><th>Kind</th><th>Tenant</th><th>Attempt</th><th>Updated</th></tr>
      ${rows || `<tr><td colspan="7">No jobs match.</td></tr>`}</table>
      ${params.get("after") ? `<a href="#/jobs?${(() => { const p = new URLSearchParams(params); p.delete("after"); return p; })()}">First page</a> ` : ""}
      ${r.next ? `<a href="#/jobs?${next}" data-testid="next-page">Next page</a>` : ""}`;
  },

  async job(id) {
    const r = await api("jobs/" + encodeURIComponent(id));
    const j = r.job;
    const field = (k, v) => (v === undefined || v === null || v === "" ? "" : `<dt>${esc(k)}</dt><dd>${v}</dd>`);
    const json = (v) => (v === undefined || v === null ? "" : `<pre>${esc(JSON.stringify(v, null, 2))}</pre>`);
    const buttons = [];
    const live = !["succeeded", "failed", "cancelled", "timed_out", "halted", "dead_lettered", "denied"].includes(j.state);
    if (me && me.can_cancel && live) buttons.push(`<button data-testid="cancel" data-post="jobs/${encodeURIComponent(j.id)}/cancel">Cancel</button>`);
    if (me && me.can_replay && j.state === "dead_lettered") buttons.push(`<button data-testid="replay" data-post="jobs/${encodeURIComponent(j.id)}/replay">Replay</button>`);
    const events = r.events.map((e) => `<tr><td>${time(e.at)}</td><td>${esc(e.type)}</td><td>${state(e.from_state)} → ${state(e.to_state)}</td>
      <td>${esc(e.actor)} ${esc(e.actor_id || "")}</td><td class="num">${e.attempt}</td><td>${esc(e.reason || "")}</td></tr>`).join("");
    const attempts = (r.attempts || []).map((a) => `<tr><td class="num">${a.attempt}</td><td>${esc(a.owner)}</td><td>${time(a.started)}</td>
      <td>${time(a.ended)}</td><td>${a.outcome ? state(a.outcome) : "running"}</td><td>${esc(a.error || "")} ${esc(a.error_message || "")}</td></tr>`).join("");
    return `<h2>Job <span data-testid="job-id">${esc(j.id)}</span> ${state(j.state)}</h2>
      <p data-testid="actions">${buttons.join("")}</p>
      <dl>${field("kind", esc(j.kind))}${field("queue", esc(j.queue))}${field("tenant", esc(j.tenant || "default"))}
      ${field("attempt", `${j.attempt} of ${j.max_attempts}`)}${field("owner", esc(j.owner))}${field("lease expires", time(j.lease_expires_at))}
      ${field("run at", time(j.run_at))}${field("created", time(j.created_at))}${field("finished", time(j.finished_at))}
      ${field("phase", esc(j.phase))}${field("reason", esc([j.reason_code, j.reason].filter(Boolean).join(": ")))}
      ${field("correlation id", esc(j.correlation_id))}${field("trace id", esc(j.trace))}${field("replay of", j.replay_of ? jobLink(j.replay_of) : "")}
      ${field("run", j.run_id ? `<a href="#/run/${encodeURIComponent(j.run_id)}" data-testid="run-link">${esc(j.run_id)}</a> step ${j.step_index || 0}` : "")}
      ${field("depends on", (j.depends_on || []).map(jobLink).join(", "))}</dl>
      <h3>Payload</h3>${json(j.payload)}
      ${j.progress ? `<h3>Progress</h3>${json(j.progress)}` : ""}
      ${j.result ? `<h3>Result</h3>${json(j.result)}` : ""}
      ${j.error || j.last_error ? `<h3>Error</h3>${json(j.error || j.last_error)}` : ""}
      ${stepsTimeline(r.steps)}
      <h3>Attempts</h3><table data-testid="attempts"><tr><th>#</th><th>Worker</th><th>Started</th><th>Ended</th><th>Outcome</th><th>Error</th></tr>${attempts}</table>
      <h3>Events</h3><table data-testid="events"><tr><th>At</th><th>Type</th><th>Transition</th><th>By</th><th>Attempt</th><th>Reason</th></tr>${events}</table>
      ${r.provenance ? `<h3>Provenance</h3>${json(r.provenance)}` : ""}`;
  },

  async dlq(_, params) {
    const r = await api("dlq?" + params.toString());
    const groups = r.groups.map((g) => `<h3 data-testid="dlq-group">${esc(g.reason_code)} (${g.count})
        ${me && me.can_replay ? `<button data-testid="replay-group" data-replay-reason="${esc(g.reason_code)}">Replay all ${g.count}</button>` : ""}</h3>
      <table><tr>${me && me.can_replay ? "<th></th>" : ""}<th>Id</th><th>Queue</th><th>Kind</th><th>Error</th><th>Dead since</th></tr>
      ${g.jobs.map((j) => `<tr data-testid="dlq-row">${me && me.can_replay ? `<td><input type="checkbox" class="pick" value="${esc(j.id)}" aria-label="select ${esc(j.id)}"></td>` : ""}
        <td>${jobLink(j.id)}</td><td>${esc(j.queue)}</td><td>${esc(j.kind)}</td>
        <td>${esc((e => e ? e.code + ": " + e.message : "")(j.error || j.last_error))}</td><td>${time(j.finished_at)}</td></tr>`).join("")}</table>`).join("");
    return `<h2>Dead letters</h2>
      ${me && me.can_replay && r.groups.length ? `<button data-testid="replay-selected" data-replay-selected>Replay selected</button>` : ""}
      ${groups || "<p>The dead-letter queue is empty.</p>"}`;
  },

  async stalled() {
    const r = await api("stalled");
    const rows = r.jobs.map((j) => `<tr data-testid="stalled-row"><td>${jobLink(j.id)}</td><td>${state(j.state)}</td><td>${esc(j.owner || j.last_owner || "")}</td>
      <td>${esc(j.queue)}</td><td>${esc(j.kind)}</td><td class="num">${j.lease_age_seconds.toFixed(0)}s</td></tr>`).join("");
    return `<h2>Stalled and silent jobs</h2><p>Stalled jobs, and leased jobs with no heartbeat for over ${r.stale_after_seconds}s.</p>
      <table data-testid="stalled"><tr><th>Id</th><th>State</th><th>Worker</th><th>Queue</th><th>Kind</th><th>Since last heartbeat</th></tr>
      ${rows || `<tr><td colspan="6">None.</td></tr>`}</table>`;
  },

  // The webhook outbox: admins of the default tenant only (its rows carry
  // no tenant). Dead messages get a replay button unless read-only.
  async outbox() {
    const r = await api("outbox");
    const table = (name, ms, cols, row) => `<h3>${name} (${ms.length}${ms.length >= r.limit ? "+" : ""})</h3>
      <table data-testid="outbox-${name.toLowerCase()}"><tr><th>Id</th><th>Webhook</th><th>About</th><th>Event</th><th>Attempts</th>${cols}</tr>
      ${ms.map((m) => `<tr data-testid="outbox-row"><td>${m.id}</td><td>${esc(m.webhook_id)}</td>
        <td>${m.aggregate === "job" ? jobLink(m.aggregate_id) : esc(m.aggregate + " " + m.aggregate_id)}</td>
        <td>${esc(m.event_type)}</td><td class="num">${m.attempts}</td>${row(m)}</tr>`).join("") || `<tr><td colspan="8">None.</td></tr>`}</table>`;
    return `<h2>Outbox</h2><p>Webhook deliveries not yet made, retrying, or dead.</p>
      ${table("Pending", r.pending, "<th>Due</th>", (m) => `<td>${time(m.next_attempt_at)}</td>`)}
      ${table("Failed", r.failed, "<th>Next attempt</th><th>Last error</th>", (m) => `<td>${time(m.next_attempt_at)}</td><td>${esc(m.last_error)}</td>`)}
      ${table("Dead", r.dead, "<th>Last error</th><th></th>", (m) => `<td>${esc(m.last_error)}</td>
        <td>${r.can_replay ? `<button data-testid="outbox-replay" data-post="outbox/${m.id}/replay">Replay</button>` : ""}</td>`)}`;
  },

  async workers() {
    const r = await api("workers");
    const rows = r.workers.map((w) => `<tr data-testid="worker-row"><td>${esc(w.owner)}</td><td>${time(w.last_heartbeat)}</td>
      <td>${w.leases.map((l) => `${jobLink(l.job_id)} ${esc(l.kind)} ${state(l.state)} until ${time(l.lease_expires_at)}`).join("<br>")}</td></tr>`).join("");
    return `<h2>Workers</h2><table data-testid="workers"><tr><th>Worker</th><th>Last heartbeat</th><th>Leases</th></tr>
      ${rows || `<tr><td colspan="3">No worker holds a lease.</td></tr>`}</table>`;
  },
};

// stepsTimeline shows a job's recorded steps in order, each with a bar
// placed where it ran between the first step's start and the last one's end.
function stepsTimeline(steps) {
  if (!steps || !steps.length) return "";
  const t0 = Math.min(...steps.map((s) => new Date(s.started).getTime()));
  const t1 = Math.max(...steps.map((s) => new Date(s.recorded_at).getTime()));
  const span = Math.max(t1 - t0, 1);
  const rows = steps.map((s) => {
    const left = ((new Date(s.started).getTime() - t0) / span) * 100;
    const width = Math.max((s.duration_ms / span) * 100, 0.8);
    const result = s.error ? `${s.error.code}: ${s.error.message}` : s.output ? JSON.stringify(s.output) : "";
    return `<tr data-testid="step-row"><td class="num">${s.seq}</td><td>${esc(s.name)}</td><td>${esc(s.kind)}</td>
      <td><span class="state state-${s.status === "ok" ? "succeeded" : "failed"}">${esc(s.status)}</span></td><td class="num">${s.attempt}</td>
      <td class="num">${s.duration_ms}ms</td><td class="timeline"><span class="bar" style="left:${left.toFixed(2)}%;width:${Math.min(width, 100 - left).toFixed(2)}%"></span></td>
      <td><code>${esc(result.length > 80 ? result.slice(0, 80) + "…" : result)}</code></td></tr>`;
  }).join("");
  return `<h3>Steps</h3><table data-testid="steps"><tr><th scope="col">#</th><th scope="col">Step</th><th scope="col">Kind</th><th scope="col">Status</th>
    <th scope="col">Attempt</th><th scope="col">Ran</th><th scope="col">When (${((t1 - t0) / 1000).toFixed(1)}s in all)</th><th scope="col">Result</th></tr>${rows}</table>`;
}

// flowTable shows each queue's flow control: paused, and each limit with
// its current use (running against the concurrency limit, starts in the
// current rate window), with pause / resume buttons for admins.
function flowTable(flow, counts) {
  if (!flow.supported) return "";
  const byName = new Map(flow.queues.map((q) => [q.name, q]));
  const names = [...new Set([...Object.keys(counts.queues), ...byName.keys()])].sort();
  const rows = names.map((name) => {
    const q = byName.get(name) || { name, paused: false, max_running: 0, running: counts.queues[name].running, rate_limit: 0, key_limit: 0 };
    const per = (s) => (s >= 60 && s % 60 === 0 ? `${s / 60}min` : `${s}s`);
    const weights = Object.entries(q.weights || {}).map(([t, w]) => `${esc(t)}=${w}`).join(", ");
    const button = flow.can_pause
      ? `<button data-testid="${q.paused ? "resume" : "pause"}" data-flow="${q.paused ? "resume" : "pause"}" data-queue="${esc(name)}">${q.paused ? "Resume" : "Pause"}</button>`
      : "";
    return `<tr data-testid="flow-row" data-queue="${esc(name)}"><td>${esc(name)}</td>
      <td>${q.paused ? `<span class="state state-paused" data-testid="paused">paused</span>` : ""}</td>
      <td class="num" data-testid="running-limit">${q.max_running ? `${q.running} / ${q.max_running}` : `${q.running}`}</td>
      <td class="num" data-testid="rate">${q.rate_limit ? `${q.rate_used} / ${q.rate_limit} per ${per(q.rate_interval_seconds)}` : ""}</td>
      <td class="num">${q.key_limit || ""}</td><td>${q.fair_tenants ? `fair${weights ? ` (${weights})` : ""}` : ""}</td>
      <td>${button}</td></tr>`;
  }).join("");
  return `<h3>Flow control</h3>
    <table data-testid="flow"><tr><th>Queue</th><th>Paused</th><th>Running / max</th><th>Rate used / limit</th><th>Per key</th><th>Fairness</th><th></th></tr>
    ${rows || `<tr><td colspan="7">No queues.</td></tr>`}</table>`;
}

async function act(path, body) {
  let out = null;
  try {
    out = await api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}) });
    $("#error").textContent = "";
  } catch (e) {
    $("#error").textContent = e.message;
  }
  await render(true);
  return out;
}

// confirmAction asks in a modal dialog (keyboard: Enter confirms, Escape
// cancels) and resolves true when the user confirms.
function confirmAction(message) {
  const d = $("#confirm");
  $("#confirm-message").textContent = message;
  return new Promise((resolve) => {
    d.addEventListener("close", () => resolve(d.returnValue === "yes"), { once: true });
    d.returnValue = "";
    d.showModal();
    $("#confirm-yes").focus();
  });
}
function replaySelected() {
  const ids = [...document.querySelectorAll(".pick:checked")].map((c) => c.value);
  if (ids.length) act("dlq/replay", { ids });
}
function replayAll(reason) {
  act("dlq/replay", { all: true, reason_code: reason });
}

let drawn = "";
// render draws the page of the address. A timed redraw (not forced) skips
// still pages, and pages where the user is typing in a form, and leaves
// the page alone when nothing changed, so focus and selection survive.
async function render(force) {
  const { page, arg, params } = route();
  const fromTimer = force === "timer";
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.dataset.page === page);
    if (a.dataset.page === page) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  if (fromTimer && (still.has(page) || (document.activeElement && document.activeElement.closest("#main form")))) return;
  if (page !== "jobs") $("#filters").hidden = true;
  const fn = pages[page] || pages.queues;
  try {
    const html = await fn(arg, params);
    const key = location.hash + "\n" + html;
    if (key !== drawn) {
      // Keep checked boxes, open details and the focused control across redraws.
      const picked = new Set([...document.querySelectorAll(".pick:checked")].map((c) => c.value));
      const open = new Set([...document.querySelectorAll("#main details[open]")].map((d) => d.id));
      const focus = focusKey(document.activeElement);
      $("#main").innerHTML = html;
      drawn = key;
      // Wide tables scroll on their own (on a phone), reachable by keyboard.
      for (const t of document.querySelectorAll("#main table")) {
        if (t.closest(".scroll")) continue;
        const box = document.createElement("div");
        box.className = "scroll";
        box.tabIndex = 0;
        t.replaceWith(box);
        box.appendChild(t);
      }
      for (const c of document.querySelectorAll(".pick")) c.checked = picked.has(c.value);
      for (const d of document.querySelectorAll("#main details")) if (open.has(d.id)) d.open = true;
      if (focus) {
        const el = [...document.querySelectorAll("#main a, #main button, #main input, #main select")].find((e) => focusKey(e) === focus);
        if (el) el.focus();
      }
    }
    $("#live").textContent = "live · " + new Date().toLocaleTimeString();
    $("#error").textContent = "";
  } catch (e) {
    if (me) $("#error").textContent = e.message;
  }
}

// focusKey names a control inside #main by what it does, to find it again
// after a redraw.
function focusKey(el) {
  if (!el || !el.closest || !el.closest("#main")) return "";
  return [el.tagName, el.getAttribute("href"), el.dataset.post, el.dataset.flow, el.dataset.queue, el.name, el.value, el.textContent].join("|");
}

async function start() {
  try {
    me = await api("whoami");
  } catch (e) {
    return;
  }
  $("#login").hidden = true;
  $("#nav-outbox").hidden = !me.can_see_outbox;
  $("#nav-bus").hidden = !me.can_see_bus;
  $("#who").textContent = `${me.name} · ${me.role} · tenant ${me.tenant}${me.read_only ? " · read-only" : ""}`;
  render(true);
  clearInterval(timer);
  timer = setInterval(() => render("timer"), 2000);
}

// Buttons say what they do in data attributes (no inline handlers, so no
// job field ever reaches JavaScript source).
$("#main").addEventListener("click", async (e) => {
  const b = e.target.closest("button");
  if (!b || b.closest("form")) return;
  if (b.dataset.confirm && !(await confirmAction(b.dataset.confirm))) return;
  if (b.dataset.bulk) bulkAction(b);
  else if (b.dataset.post) {
    const out = await act(b.dataset.post, b.dataset.body ? JSON.parse(b.dataset.body) : undefined);
    if (out && b.hasAttribute("data-goto-run") && out.run) location.hash = "#/run/" + encodeURIComponent(out.run.id);
  } else if (b.dataset.flow) act("flow/" + b.dataset.flow, { queue: b.dataset.queue });
  else if (b.dataset.replayReason !== undefined) replayAll(b.dataset.replayReason);
  else if (b.hasAttribute("data-replay-selected")) replaySelected();
});

window.addEventListener("hashchange", () => render(true));
document.addEventListener("DOMContentLoaded", start);
