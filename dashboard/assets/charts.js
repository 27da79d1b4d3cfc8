// stint dashboard charts: small inline SVG drawings of a series over time,
// no library and no build step. Each chart is an <svg role="img"> with a
// title and a description that says in words what it shows.
"use strict";

const charts = (() => {
  const W = 560, H = 190, L = 52, R = 10, T = 12, B = 34;
  const plotW = W - L - R, plotH = H - T - B;
  const escText = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  let serial = 0;

  // niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  // ms formats milliseconds for an axis: 5ms, 1.2s, 3m, 1h.
  function ms(v) {
    if (v === null || v === undefined) return "–";
    if (v < 1000) return `${+v.toFixed(1)}ms`;
    if (v < 60_000) return `${+(v / 1000).toFixed(1)}s`;
    if (v < 3_600_000) return `${+(v / 60_000).toFixed(1)}m`;
    return `${+(v / 3_600_000).toFixed(1)}h`;
  }

  const clock = (t) => new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });

  // frame draws the axes, the y grid at 0, max/2 and max, and time labels.
  function frame(times, max, fmt) {
    const grid = [0, 0.5, 1].map((f) => {
      const y = T + plotH * (1 - f);
      return `<line x1="${L}" x2="${W - R}" y1="${y}" y2="${y}" stroke="#ccc"/>
        <text x="${L - 6}" y="${y + 4}" text-anchor="end" font-size="11" fill="#333">${escText(fmt(max * f))}</text>`;
    }).join("");
    const n = times.length;
    const ticks = [[0, "start"], [Math.floor(n / 2), "middle"], [n - 1, "end"]].map(([i, anchor]) => {
      const x = anchor === "start" ? L : anchor === "end" ? W - R : L + (plotW * (i + 0.5)) / n;
      return `<text x="${x}" y="${H - 12}" text-anchor="${anchor}" font-size="11" fill="#333">${escText(clock(times[i]))}</text>`;
    }).join("");
    return grid + ticks;
  }

  function legend(series) {
    return `<ul class="legend">${series.map((s) => `<li><span class="swatch" style="background:${s.colour}"></span>${escText(s.name)}</li>`).join("")}</ul>`;
  }

  function svg(id, title, desc, body) {
    return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}-t ${id}-d" class="chart" data-testid="chart">
      <title id="${id}-t">${escText(title)}</title><desc id="${id}-d">${escText(desc)}</desc>${body}</svg>`;
  }

  // bars draws stacked bars, one stack per time step.
  function bars({ title, times, series, fmt = (v) => +v.toFixed(2), unit = "" }) {
    const id = "chart" + ++serial;
    const n = times.length;
    const totals = times.map((_, i) => series.reduce((a, s) => a + (s.values[i] || 0), 0));
    const max = niceMax(Math.max(...totals));
    const bw = plotW / n;
    let body = frame(times, max, fmt);
    for (let i = 0; i < n; i++) {
      let y = T + plotH;
      for (const s of series) {
        const h = (plotH * (s.values[i] || 0)) / max;
        if (h <= 0) continue;
        y -= h;
        body += `<rect x="${(L + i * bw + bw * 0.1).toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(bw * 0.8, 1).toFixed(1)}" height="${h.toFixed(1)}" fill="${s.colour}"/>`;
      }
    }
    const desc = series.map((s) => `${s.name}: peak ${fmt(Math.max(0, ...s.values))}${unit}`).join("; ");
    return `<figure class="chart-box"><figcaption>${escText(title)}</figcaption>${svg(id, title, desc, body)}${legend(series)}</figure>`;
  }

  // lines draws one line per series; a null value breaks its line.
  function lines({ title, times, series, fmt = (v) => +v.toFixed(1), unit = "" }) {
    const id = "chart" + ++serial;
    const n = times.length;
    const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values.filter((v) => v !== null))));
    let body = frame(times, max, fmt);
    for (const s of series) {
      let path = "", pen = false;
      s.values.forEach((v, i) => {
        if (v === null || v === undefined) { pen = false; return; }
        const x = L + (plotW * (i + 0.5)) / n, y = T + plotH * (1 - v / max);
        path += `${pen ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)} `;
        pen = true;
      });
      // Lone points show as dots.
      s.values.forEach((v, i) => {
        const prev = s.values[i - 1], next = s.values[i + 1];
        if (v !== null && v !== undefined && (prev === null || prev === undefined) && (next === null || next === undefined)) {
          body += `<circle cx="${(L + (plotW * (i + 0.5)) / n).toFixed(1)}" cy="${(T + plotH * (1 - v / max)).toFixed(1)}" r="2.5" fill="${s.colour}"/>`;
        }
      });
      if (path) body += `<path d="${path}" fill="none" stroke="${s.colour}" stroke-width="2" ${s.dash ? `stroke-dasharray="5 3"` : ""}/>`;
    }
    const desc = series.map((s) => {
      const vs = s.values.filter((v) => v !== null && v !== undefined);
      return vs.length ? `${s.name}: latest ${fmt(vs[vs.length - 1])}${unit}, peak ${fmt(Math.max(...vs))}${unit}` : `${s.name}: no data`;
    }).join("; ");
    return `<figure class="chart-box"><figcaption>${escText(title)}</figcaption>${svg(id, title, desc, body)}${legend(series)}</figure>`;
  }

  return { bars, lines, ms };
})();
