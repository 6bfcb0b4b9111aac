/**
 * A grouped bar chart as a standalone SVG string (no dependency): one group
 * per size on the x axis, one bar per series, linear or log-10 y axis with
 * labelled ticks, value labels on the bars, a legend. Missing values leave a
 * gap; `estimated` values are drawn hatched and labelled as such.
 */

export interface Series {
  name: string;
  color: string;
  /** One value per group (undefined = not measured). */
  values: (number | undefined)[];
  /** Per group: drawn hatched, labelled "(extrapolated)" in the legend. */
  estimated?: boolean[];
}

export interface ChartOptions {
  title: string;
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  groups: string[];
  series: Series[];
  log: boolean;
  /** Formats a value for the bar labels. */
  format: (v: number) => string;
  /** Formats the y ticks (default: `format`). */
  tick?: (v: number) => string;
  /** A dashed horizontal line, e.g. a target. */
  line?: { value: number; label: string };
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function barChart(o: ChartOptions): string {
  const W = 1200;
  const H = 560;
  const m = { top: 64, right: 330, bottom: 70, left: 90 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const all = [...o.series.flatMap((s) => s.values), ...(o.line ? [o.line.value] : [])].filter((v): v is number => v !== undefined && v > 0);
  const maxV = Math.max(...all, 1);
  const minV = Math.min(...all, maxV);

  let y: (v: number) => number;
  let ticks: number[];
  if (o.log) {
    const lo = Math.floor(Math.log10(minV));
    const hi = Math.ceil(Math.log10(maxV * 1.5));
    y = (v) => m.top + ph - ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * ph;
    ticks = [];
    for (let e = lo; e <= hi; e++) ticks.push(10 ** e);
  } else {
    const step = niceStep(maxV / 5);
    const top = Math.ceil((maxV * 1.1) / step) * step;
    y = (v) => m.top + ph - (v / top) * ph;
    ticks = [];
    for (let t = 0; t <= top + step / 2; t += step) ticks.push(t);
  }
  const baseY = m.top + ph;

  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push('<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="white"/><line x1="0" y1="0" x2="0" y2="6" stroke="black" stroke-width="2" stroke-opacity="0.35"/></pattern></defs>');
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${m.left}" y="26" font-size="17" font-weight="bold">${esc(o.title)}</text>`);
  if (o.subtitle) out.push(`<text x="${m.left}" y="46" fill="#555">${esc(o.subtitle)}</text>`);

  // Grid and y ticks.
  for (const t of ticks) {
    const ty = y(t);
    out.push(`<line x1="${m.left}" y1="${ty.toFixed(1)}" x2="${m.left + pw}" y2="${ty.toFixed(1)}" stroke="#ddd"/>`);
    out.push(`<text x="${m.left - 8}" y="${(ty + 4).toFixed(1)}" text-anchor="end">${esc((o.tick ?? o.format)(t))}</text>`);
  }
  out.push(`<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${baseY}" stroke="black"/>`);
  out.push(`<line x1="${m.left}" y1="${baseY}" x2="${m.left + pw}" y2="${baseY}" stroke="black"/>`);
  out.push(
    `<text transform="translate(${m.left - 70},${m.top + ph / 2}) rotate(-90)" text-anchor="middle" font-size="13">${esc(o.yLabel)}${o.log ? ' (log scale)' : ''}</text>`,
  );
  out.push(`<text x="${m.left + pw / 2}" y="${H - 18}" text-anchor="middle" font-size="13">${esc(o.xLabel)}</text>`);

  // Bars.
  const gw = pw / o.groups.length;
  const bw = Math.min(28, (gw * 0.85) / o.series.length);
  o.groups.forEach((g, gi) => {
    const gx = m.left + gi * gw + (gw - bw * o.series.length) / 2;
    out.push(`<text x="${(m.left + gi * gw + gw / 2).toFixed(1)}" y="${baseY + 20}" text-anchor="middle" font-size="13">${esc(g)}</text>`);
    o.series.forEach((s, si) => {
      const v = s.values[gi];
      if (v === undefined || !(v > 0)) return;
      const x = gx + si * bw;
      const top = y(v);
      const est = s.estimated?.[gi] ?? false;
      out.push(
        `<rect x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${(baseY - top).toFixed(1)}" fill="${est ? 'url(#hatch)' : s.color}" stroke="${s.color}" stroke-width="${est ? 2 : 0}"><title>${esc(`${s.name}, ${g}: ${o.format(v)}${est ? ' (extrapolated)' : ''}`)}</title></rect>`,
      );
      const lx = x + (bw - 2) / 2 + 4;
      out.push(`<text transform="translate(${lx.toFixed(1)},${(top - 4).toFixed(1)}) rotate(-90)" font-size="10">${esc(o.format(v) + (est ? ' est.' : ''))}</text>`);
    });
  });

  if (o.line) {
    const ly = y(o.line.value);
    out.push(`<line x1="${m.left}" y1="${ly.toFixed(1)}" x2="${m.left + pw}" y2="${ly.toFixed(1)}" stroke="#d62728" stroke-width="1.5" stroke-dasharray="6 4"/>`);
    out.push(`<text x="${m.left + 6}" y="${(ly - 6).toFixed(1)}" fill="#d62728">${esc(o.line.label)}</text>`);
  }

  // Legend.
  const lx = m.left + pw + 20;
  o.series.forEach((s, si) => {
    const ly = m.top + si * 22;
    out.push(`<rect x="${lx}" y="${ly}" width="14" height="14" fill="${s.color}"/>`);
    out.push(`<text x="${lx + 20}" y="${ly + 11}">${esc(s.name)}</text>`);
  });
  if (o.series.some((s) => s.estimated?.some(Boolean))) {
    const ly = m.top + o.series.length * 22 + 6;
    out.push(`<rect x="${lx}" y="${ly}" width="14" height="14" fill="url(#hatch)" stroke="#333"/>`);
    out.push(`<text x="${lx + 20}" y="${ly + 11}">extrapolated (linear)</text>`);
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function niceStep(raw: number): number {
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  for (const k of [1, 2, 5, 10]) if (raw <= k * p) return k * p;
  return 10 * p;
}

/** Log-axis ticks (powers of ten) in one unit per range: `10 ms`, `100 ms`, `1 s` ... `10,000 s`. */
export function formatTickMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toLocaleString('en-US')} s`;
}

/** `850 ms`, `1.2 s`, `3.4 min`. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${ms >= 10 ? ms.toFixed(0) : ms.toPrecision(2)} ms`;
  if (ms < 120_000) return `${(ms / 1000).toPrecision(ms < 10_000 ? 2 : 3)} s`;
  if (ms < 7_200_000) return `${(ms / 60_000).toPrecision(3)} min`;
  return `${(ms / 3_600_000).toPrecision(3)} h`;
}
