// stint dashboard: the bus page (the NATS bridge of docs/bus.md): its
// streams, the consumers and how far behind each is, what is out with bus
// workers, the events waiting in the outbox, and the bridge's counts.
"use strict";

Object.assign(pages, {
  async bus() {
    const r = await api("bus");
    if (!r.enabled) return `<h2>Bus</h2><p>This process runs no bus bridge: start it with <code>--nats-url</code> (docs/bus.md).</p>`;
    const s = r.status;
    const n = (v) => Number(v || 0).toLocaleString("en");
    const byKey = (o) => Object.entries(o || {}).map(([k, v]) => `${esc(k)} ${n(v)}`).join(", ") || "none";
    const lag = s.oldest_event ? `${ago(s.oldest_event).replace(" ago", "")} (oldest from ${time(s.oldest_event)})` : "none";
    const streams = (s.streams || []).map((x) => `<tr data-testid="bus-stream"><td>${esc(x.role)}</td><td>${esc(x.name)}</td>
      <td class="num">${n(x.messages)}</td><td class="num">${n(x.bytes)}</td></tr>`).join("");
    const consumers = (s.consumers || []).map((c) => `<tr data-testid="bus-consumer"><td>${esc(c.stream)}</td><td>${esc(c.name)}</td>
      <td class="num" data-testid="bus-consumer-pending">${n(c.pending)}</td><td class="num">${n(c.ack_pending)}</td>
      <td class="num">${n(c.redelivered)}</td><td class="num">${n(c.waiting)}</td><td>${c.last_active ? time(c.last_active) : "never"}</td></tr>`).join("");
    const c = s.counts || {};
    return `<h2>Bus <span data-testid="bus-connected">${s.connected ? "connected" : "not connected"}</span></h2>
      <p>Bridge <strong>${esc(s.name)}</strong> on ${esc(s.url || "?")}, queue ${esc(s.queue)}.
        ${s.error ? `<span class="error" data-testid="bus-error">${esc(s.error)}</span>` : ""}</p>
      <dl data-testid="bus-counts">
        <dt>Requests received</dt><dd data-testid="bus-received">${n(c.received)}</dd>
        <dt>Jobs enqueued</dt><dd data-testid="bus-enqueued">${n(c.enqueued)}</dd>
        <dt>Duplicates</dt><dd>${n(c.duplicates)}</dd>
        <dt>Denied</dt><dd>${n(c.denied)}</dd>
        <dt>Refused</dt><dd>${byKey(c.rejected)}</dd>
        <dt>Dispatched to bus workers</dt><dd data-testid="bus-dispatched">${n(c.dispatched)}</dd>
        <dt>Out with bus workers now</dt><dd>${n(s.dispatched)}</dd>
        <dt>Results applied</dt><dd data-testid="bus-applied">${byKey(c.applied)}</dd>
        <dt>Results ignored</dt><dd>${byKey(c.ignored)}</dd>
        <dt>Events published</dt><dd data-testid="bus-published">${n(c.published)}</dd>
        <dt>Events waiting</dt><dd data-testid="bus-waiting">${n(s.events_waiting)}${s.events_waiting >= 1000 ? "+" : ""}</dd>
        <dt>Event lag</dt><dd>${lag}</dd>
      </dl>
      <h3>Consumers</h3>
      <div class="scroll" tabindex="0"><table data-testid="bus-consumers"><caption class="sr">Durable consumers of the bridge's streams; pending is how far behind each is</caption>
      <tr><th scope="col">Stream</th><th scope="col">Consumer</th><th scope="col">Pending (lag)</th><th scope="col">Unacked</th>
        <th scope="col">Redelivered</th><th scope="col">Pulls waiting</th><th scope="col">Last delivery</th></tr>
      ${consumers || `<tr><td colspan="7">No consumers.</td></tr>`}</table></div>
      <h3>Streams</h3>
      <div class="scroll" tabindex="0"><table data-testid="bus-streams"><tr><th scope="col">Role</th><th scope="col">Stream</th><th scope="col">Messages</th><th scope="col">Bytes</th></tr>
      ${streams || `<tr><td colspan="4">Not readable now.</td></tr>`}</table></div>`;
  },
});
