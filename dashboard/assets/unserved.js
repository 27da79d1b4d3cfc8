// stint dashboard: the queues page's panel of jobs that wait for a kind no
// worker handles (DESIGN §7: such jobs are not discarded; they wait, and are
// reported). It wraps the queues page of app.js.
"use strict";

{
  const queuesPage = pages.queues;
  pages.queues = async (...args) => {
    const page = await queuesPage(...args);
    const r = await api("unserved");
    if (!r.kinds.length) {
      return page + `<section data-testid="unserved" aria-labelledby="unserved-h"><h3 id="unserved-h">Unserved kinds</h3>
        <p>Every queued job has a worker for its kind.</p></section>`;
    }
    const rows = r.kinds.map((k) => `<tr data-testid="unserved-row"><td><a href="#/jobs?queue=${encodeURIComponent(k.queue)}&kind=${encodeURIComponent(k.kind)}&state=queued">${esc(k.queue)}</a></td>
      <td>${esc(k.kind)}</td><td class="num">${k.jobs}</td></tr>`).join("");
    return page + `<section data-testid="unserved" aria-labelledby="unserved-h"><h3 id="unserved-h">Unserved kinds</h3>
      <p class="error">These queued jobs wait for a kind no worker seen in the last minute handles: start a worker that registers it, or cancel them.</p>
      <table><tr><th>Queue</th><th>Kind</th><th>Queued jobs</th></tr>${rows}</table></section>`;
  };
}
