// stint dashboard: the runs, schedules and search pages (app.js holds the
// others and the plumbing they share: api, esc, state, time, jobLink,
// confirmAction). Each page is a function of JSON from ./api/.
"use strict";

const ago = (t) => {
  if (!t) return "";
  const s = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000);
  return s < 90 ? `${Math.round(s)}s ago` : s < 5400 ? `${Math.round(s / 60)}m ago` : s < 172800 ? `${Math.round(s / 3600)}h ago` : `${Math.round(s / 86400)}d ago`;
};
const span = (s) => (s < 90 ? `${s.toFixed(1)}s` : s < 5400 ? `${(s / 60).toFixed(1)}m` : `${(s / 3600).toFixed(1)}h`);
const runLink = (id) => `<a href="#/run/${encodeURIComponent(id)}" data-testid="run-link">${esc(id)}</a>`;
const runStates = ["queued", "running", "cancel_requested", "succeeded", "failed", "cancelled", "timed_out"];
const jobStates = ["blocked", "scheduled", "queued", "claimed", "running", "cancel_requested", "stalled", "retrying",
  "succeeded", "failed", "cancelled", "timed_out", "halted", "dead_lettered", "denied"];
const select = (name, label, values, current) => `<label>${label} <select name="${name}"><option value="">any</option>
  ${values.map((v) => `<option ${v === current ? "selected" : ""}>${esc(v)}</option>`).join("")}</select></label>`;
const input = (name, label, value, extra = "") => `<label>${label} <input name="${name}" value="${esc(value || "")}" ${extra}></label>`;

// A form with data-route sends its filled fields to that page's address.
document.addEventListener("submit", (e) => {
  const route = e.target.dataset && e.target.dataset.route;
  if (!route) return;
  e.preventDefault();
  const p = new URLSearchParams();
  for (const [k, v] of new FormData(e.target)) if (v) p.append(k, v);
  location.hash = `#/${route}?${p}`;
});

Object.assign(pages, {
  async runs(_, params) {
    const r = await api("runs?" + params.toString());
    const rows = r.runs.map((x) => `<tr data-testid="run-row"><td>${runLink(x.id)}</td><td>${esc(x.name || "")}</td><td>${state(x.state)}</td>
      <td title="${esc(x.created_at)}">${ago(x.created_at)}</td><td class="num">${span(x.duration_seconds)}</td>
      <td>${x.rerun_of ? `rerun of ${runLink(x.rerun_of)}` : ""}</td></tr>`).join("");
    const next = new URLSearchParams(params);
    next.set("before", r.next);
    return `<h2>Runs</h2>
      <form class="inline" data-route="runs" aria-label="Filter runs">${select("state", "State", runStates, params.get("state"))}
        ${input("name", "Name", params.get("name"), `size="16"`)}<button type="submit">Filter</button></form>
      <div class="scroll"><table data-testid="runs"><caption class="sr">Runs, newest first</caption>
      <tr><th scope="col">Run</th><th scope="col">Name</th><th scope="col">State</th><th scope="col">Created</th><th scope="col">Duration</th><th scope="col"></th></tr>
      ${rows || `<tr><td colspan="6">No runs match.</td></tr>`}</table></div>
      ${r.next ? `<a href="#/runs?${next}" data-testid="next-page">Older runs</a>` : ""}`;
  },

  // A run: its record, actions, its jobs drawn as their DAG and listed,
  // and its events.
  async run(id) {
    const r = await api("runs/" + encodeURIComponent(id));
    const run = r.run;
    const buttons = [];
    if (r.can_cancel) buttons.push(`<button data-testid="run-cancel" data-confirm="Cancel run ${esc(run.name || run.id)} and its ${r.jobs.length} jobs?" data-post="runs/${encodeURIComponent(run.id)}/cancel">Cancel run</button>`);
    if (r.can_rerun) {
      buttons.push(`<button data-testid="run-rerun" data-confirm="Rerun all ${r.jobs.length} jobs of run ${esc(run.name || run.id)} as a new run?" data-post="runs/${encodeURIComponent(run.id)}/rerun" data-body='{"failed_only":false}' data-goto-run>Rerun all</button>`);
      buttons.push(`<button data-testid="run-rerun-failed" data-confirm="Rerun the jobs of run ${esc(run.name || run.id)} that did not succeed, as a new run?" data-post="runs/${encodeURIComponent(run.id)}/rerun" data-body='{"failed_only":true}' data-goto-run>Rerun failed</button>`);
    }
    const field = (k, v) => (v ? `<dt>${esc(k)}</dt><dd>${v}</dd>` : "");
    const jobs = r.jobs.map((j) => `<tr data-testid="run-job"><td>${esc(j.name)}</td><td>${jobLink(j.id)}</td><td>${esc(j.kind)}</td>
      <td>${state(j.state)}</td><td class="num">${j.step_index || 0}</td></tr>`).join("");
    const events = (r.events || []).map((e) => `<tr><td>${time(e.at)}</td><td>${esc(e.type)}</td><td>${state(e.from_state)} → ${state(e.to_state)}</td>
      <td>${esc(e.actor)} ${esc(e.actor_id || "")}</td><td>${esc(e.reason || "")}</td></tr>`).join("");
    return `<h2>Run <span data-testid="run-id">${esc(run.name || run.id)}</span> <span data-testid="run-state">${state(run.state)}</span></h2>
      <p data-testid="actions">${buttons.join("")}</p>
      <dl>${field("id", esc(run.id))}${field("created", `${time(run.created_at)} (${ago(run.created_at)})`)}
      ${field("duration", span(run.duration_seconds))}${field("finished", time(run.finished_at))}
      ${field("rerun of", run.rerun_of ? runLink(run.rerun_of) : "")}${field("reason", esc([run.reason_code, run.reason].filter(Boolean).join(": ")))}</dl>
      ${dag(r.jobs)}
      <h3>Jobs${r.truncated ? " (the first 1000)" : ""}</h3>
      <div class="scroll"><table data-testid="run-jobs"><tr><th scope="col">Name</th><th scope="col">Job</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Step</th></tr>${jobs}</table></div>
      <h3>Events</h3><div class="scroll"><table data-testid="run-events"><tr><th scope="col">At</th><th scope="col">Type</th><th scope="col">Transition</th><th scope="col">By</th><th scope="col">Reason</th></tr>${events}</table></div>`;
  },

  async schedules() {
    const r = await api("schedules");
    if (!r.supported) return `<h2>Schedules</h2><p>This store keeps no schedules.</p>`;
    const name = (s) => encodeURIComponent(s.name);
    const rows = r.schedules.map((s) => {
      const actions = r.can_edit ? `<button data-testid="${s.paused ? "schedule-resume" : "schedule-pause"}" data-post="schedules/${name(s)}/${s.paused ? "resume" : "pause"}">${s.paused ? "Resume" : "Pause"}</button>
        <button data-testid="schedule-remove" data-confirm="Remove schedule ${esc(s.name)}? The jobs it enqueued stay." data-post="schedules/${name(s)}/delete">Remove</button>` : "";
      const next = s.bad_expr ? `<span class="error">${esc(s.bad_expr)}</span>` : s.paused ? "paused" : s.next.slice(0, 3).map((t) => `<time datetime="${esc(t)}">${new Date(t).toLocaleString()}</time>`).join("<br>");
      return `<tr data-testid="schedule-row" data-name="${esc(s.name)}"><td>${esc(s.name)} ${s.paused ? `<span class="state state-paused" data-testid="schedule-paused">paused</span>` : ""}</td>
        <td><code>${esc(s.expr)}</code>${s.time_zone ? ` ${esc(s.time_zone)}` : ""}</td><td>${esc(s.kind)} on ${esc(s.queue || "default")}</td>
        <td>${next}</td><td>${s.last_tick ? time(s.last_tick) : "never"}</td>
        <td>${s.last_job ? `${jobLink(s.last_job.id)} ${state(s.last_job.state)}` : ""}</td><td>${actions}</td></tr>`;
    }).join("");
    const form = r.can_edit ? `<details id="schedule-add" ${r.schedules.length ? "" : "open"}><summary>Add a schedule</summary>
      <form id="schedule-form" class="stack" aria-label="Add a schedule">
        ${input("name", "Name", "", `required maxlength="200"`)}
        ${input("expr", "Cron expression", "", `required placeholder="*/5 * * * * or @hourly" maxlength="200"`)}
        ${input("time_zone", "Time zone", "", `placeholder="UTC, or Europe/Paris" maxlength="200"`)}
        ${input("kind", "Job kind", "", `required maxlength="200"`)}
        ${input("queue", "Queue", "", `placeholder="default" maxlength="200"`)}
        <label>Payload (JSON) <textarea name="payload" rows="2" cols="40" placeholder='{"report": "daily"}'></textarea></label>
        <label>Missed ticks <select name="missed"><option value="">latest (default)</option><option value="all">all</option></select></label>
        <button type="submit" data-testid="schedule-add">Add schedule</button>
      </form></details>` : "";
    return `<h2>Schedules</h2><p>Periodic jobs: each tick enqueues its job once across every node.</p>
      <div class="scroll"><table data-testid="schedules"><tr><th scope="col">Name</th><th scope="col">Expression</th><th scope="col">Job</th><th scope="col">Next fires</th>
      <th scope="col">Last tick</th><th scope="col">Last job</th><th scope="col"></th></tr>
      ${rows || `<tr><td colspan="7">No schedules.</td></tr>`}</table></div>${form}`;
  },

  // Find anything: every filter in the address, so a link shares the
  // search; bulk cancel and replay of everything it finds, after a count
  // and a confirmation.
  async search(_, params) {
    const q = new URLSearchParams(params);
    q.delete("before");
    const any = [...q.keys()].length > 0;
    const [r, c] = await Promise.all([api("search?" + params.toString()), any ? api("search/count?" + q.toString()) : null]);
    const rows = r.jobs.map((j) => `<tr data-testid="search-row"><td>${jobLink(j.id)}</td><td>${state(j.state)}</td><td>${esc(j.kind)}</td>
      <td>${esc(j.queue)}</td><td>${j.run_id ? runLink(j.run_id) : ""}</td><td>${esc(j.topic || "")}</td><td title="${esc(j.created_at)}">${ago(j.created_at)}</td></tr>`).join("");
    const n = (v) => (c && v > c.most ? `more than ${c.most}` : String(v));
    let bulk = "";
    if (c) {
      const k = c.counts, desc = esc(q.toString());
      bulk = `<p data-testid="search-count">${n(k.total)} jobs match: ${n(k.cancellable)} live, ${n(k.replayable)} dead-lettered.</p>
        <p>${me && me.can_cancel && k.cancellable > 0 && k.cancellable <= c.most ? `<button data-testid="bulk-cancel" data-bulk="cancel" data-query="${desc}" data-expect="${k.cancellable}"
          data-confirm="Cancel ${k.cancellable} live jobs matching this search?">Cancel ${k.cancellable} live…</button>` : ""}
        ${me && me.can_replay && k.replayable > 0 && k.replayable <= c.most ? `<button data-testid="bulk-replay" data-bulk="replay" data-query="${desc}" data-expect="${k.replayable}"
          data-confirm="Replay ${k.replayable} dead letters matching this search?">Replay ${k.replayable} dead letters…</button>` : ""}</p>`;
    }
    const next = new URLSearchParams(params);
    next.set("before", r.next);
    const states = params.getAll("state");
    return `<h2>Search jobs</h2>
      <form class="grid-form" data-route="search" aria-label="Search jobs" id="search-form">
        <label>State <select name="state" multiple size="3">${jobStates.map((s) => `<option ${states.includes(s) ? "selected" : ""}>${s}</option>`).join("")}</select></label>
        ${input("kind", "Kind", params.get("kind"))}${input("queue", "Queue", params.get("queue"))}
        ${input("tenant", "Tenant", params.get("tenant"))}${input("run", "Run id", params.get("run"))}
        ${input("topic", "Topic (tag)", params.get("topic"), `placeholder="billing finds billing.*"`)}
        ${input("correlation", "Correlation id", params.get("correlation"))}
        ${input("path", "Payload field", params.get("path"), `placeholder="customer.id"`)}${input("value", "equals", params.get("value"))}
        ${input("from", "Created from", params.get("from"), `placeholder="6h, 7d or 2026-01-02T15:04:05Z"`)}
        ${input("to", "Created before", params.get("to"), `placeholder="1h, or a time"`)}
        <button type="submit" data-testid="search-submit">Search</button>
      </form>
      ${bulk}
      <p id="bulk-result" role="status" data-testid="bulk-result"></p>
      <div class="scroll"><table data-testid="search-results"><caption class="sr">Matching jobs, newest first</caption>
      <tr><th scope="col">Id</th><th scope="col">State</th><th scope="col">Kind</th><th scope="col">Queue</th><th scope="col">Run</th><th scope="col">Topic</th><th scope="col">Created</th></tr>
      ${rows || `<tr><td colspan="7">No jobs match.</td></tr>`}</table></div>
      ${r.next ? `<a href="#/search?${next}" data-testid="next-page">Older jobs</a>` : ""}`;
  },
});

// Pages whose content a redraw every two seconds would disturb (a search
// counts on each draw) are drawn when their address changes and after an
// action only.
still.add("search");

// The schedule form posts the schedule; the payload must be JSON.
document.addEventListener("submit", async (e) => {
  if (e.target.id !== "schedule-form") return;
  e.preventDefault();
  const f = Object.fromEntries(new FormData(e.target));
  let payload = null;
  if (f.payload.trim()) {
    try { payload = JSON.parse(f.payload); } catch (err) { $("#error").textContent = "payload: not JSON: " + err.message; return; }
  }
  delete f.payload;
  await act("schedules", Object.assign(f, { payload }));
  if (!$("#error").textContent) e.target.reset();
});

// Bulk actions post the search and the confirmed count, then say what
// they did.
async function bulkAction(b) {
  try {
    const r = await api("search/" + b.dataset.bulk, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ query: b.dataset.query, expect: Number(b.dataset.expect) }) });
    const failed = Object.keys(r.failed).length;
    await render();
    $("#bulk-result").textContent = `${b.dataset.bulk === "cancel" ? "Cancelled" : "Replayed"} ${r.done.length} jobs${failed ? `; ${failed} failed` : ""}.`;
  } catch (e) {
    $("#error").textContent = e.message;
  }
}

// dag draws a run's jobs as their DAG: each job in the column after its
// latest dependency, with an arrow from each dependency.
function dag(jobs) {
  if (!jobs.length) return "";
  const byID = new Map(jobs.map((j) => [j.id, j]));
  const level = new Map();
  const depth = (j, seen = new Set()) => {
    if (level.has(j.id)) return level.get(j.id);
    if (seen.has(j.id)) return 0;
    seen.add(j.id);
    const deps = (j.depends_on || []).filter((d) => byID.has(d));
    const l = deps.length ? 1 + Math.max(...deps.map((d) => depth(byID.get(d), seen))) : 0;
    level.set(j.id, l);
    return l;
  };
  jobs.forEach((j) => depth(j));
  const cols = [];
  for (const j of jobs) (cols[level.get(j.id)] ||= []).push(j);
  const W = 190, H = 48, GX = 60, GY = 16, pos = new Map();
  cols.forEach((col, x) => col.forEach((j, y) => pos.set(j.id, { x: 10 + x * (W + GX), y: 10 + y * (H + GY) })));
  const width = 20 + cols.length * (W + GX), height = 20 + Math.max(...cols.map((c) => c.length)) * (H + GY);
  const colour = { succeeded: "#d4f5d4", running: "#d7e9ff", claimed: "#d7e9ff", dead_lettered: "#ffd9d9", failed: "#ffd9d9", retrying: "#fff0c2", stalled: "#fff0c2" };
  const edges = jobs.flatMap((j) => (j.depends_on || []).filter((d) => pos.has(d)).map((d) => {
    const a = pos.get(d), b = pos.get(j.id);
    return `<line x1="${a.x + W}" y1="${a.y + H / 2}" x2="${b.x}" y2="${b.y + H / 2}" stroke="#888" marker-end="url(#arrow)"/>`;
  })).join("");
  const nodes = jobs.map((j) => {
    const p = pos.get(j.id);
    return `<a href="#/job/${encodeURIComponent(j.id)}" data-testid="run-node" aria-label="${esc(j.name || j.kind)}: ${esc(j.state)}"><rect x="${p.x}" y="${p.y}" width="${W}" height="${H}" rx="4"
      fill="${colour[j.state] || "#eee"}" stroke="#999"/><text x="${p.x + 8}" y="${p.y + 19}">${esc(j.name || j.kind)}</text>
      <text x="${p.x + 8}" y="${p.y + 37}" font-size="12">${esc(j.kind)} · ${esc(j.state)}</text></a>`;
  }).join("");
  return `<div class="scroll"><svg data-testid="run-dag" width="${width}" height="${height}" font-family="system-ui" font-size="13" role="group" aria-label="The run's jobs and their dependencies">
    <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#888"/></marker></defs>
    ${edges}${nodes}</svg></div>`;
}
