/**
 * The e2e bench's chart: an SVG of three panels (conn/s, p99 latency, Gbit/s), each a grouped bar
 * chart of the ratio to the limit per path, one bar per number of NatMappings, with the limit (1.0) as
 * a dashed line. Plain SVG text, no dependency (pure).
 */
import { type Measurement, type Ratios, ratios } from './results';

const panels: { key: keyof Ratios; title: string }[] = [
  { key: 'connPerS', title: 'connections/s ÷ limit (higher is better)' },
  { key: 'p99', title: 'p99 latency ÷ limit (lower is better)' },
  { key: 'gbps', title: 'Gbit/s ÷ limit (higher is better)' },
];
const colours = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#b07aa1'];
const panelWidth = 320;
const plotHeight = 220;
const top = 40;
const left = 40;

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const num = (x: number) => Number(x.toFixed(1)).toString();

/** The y axis' top: 1.2 at least, else the largest ratio rounded up to a half. */
export function axisTop(values: readonly number[]): number {
  return Math.max(1.2, Math.ceil(Math.max(0, ...values) * 2) / 2);
}

export function ratioChart(measurements: readonly Measurement[]): string {
  const shown = measurements.filter((m) => !m.path.startsWith('limit'));
  const paths = [...new Set(shown.map((m) => m.path))];
  const sizes = [...new Set(shown.map((m) => m.mappings))].sort((a, b) => a - b);
  const width = panels.length * panelWidth;
  const height = top + plotHeight + 70;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
  ];
  panels.forEach((panel, pi) => {
    const x0 = pi * panelWidth + left;
    const plotWidth = panelWidth - left - 10;
    const yTop = axisTop(shown.map((m) => ratios(m)[panel.key]));
    const y = (v: number) => top + plotHeight - (v / yTop) * plotHeight;
    out.push(`<text x="${x0 + plotWidth / 2}" y="${top - 18}" text-anchor="middle" font-weight="bold">${escape(panel.title)}</text>`);
    out.push(`<line x1="${x0}" y1="${top}" x2="${x0}" y2="${top + plotHeight}" stroke="black"/>`);
    out.push(`<line x1="${x0}" y1="${top + plotHeight}" x2="${x0 + plotWidth}" y2="${top + plotHeight}" stroke="black"/>`);
    for (const tick of [0, yTop / 2, yTop])
      out.push(`<text x="${x0 - 4}" y="${num(y(tick) + 4)}" text-anchor="end">${Number(tick.toFixed(2))}</text>`);
    out.push(`<line x1="${x0}" y1="${num(y(1))}" x2="${x0 + plotWidth}" y2="${num(y(1))}" stroke="grey" stroke-dasharray="4 3"/>`);
    const groupWidth = plotWidth / Math.max(1, paths.length);
    const barWidth = (groupWidth * 0.8) / Math.max(1, sizes.length);
    paths.forEach((path, gi) => {
      const gx = x0 + gi * groupWidth + groupWidth * 0.1;
      sizes.forEach((size, si) => {
        const m = shown.find((s) => s.path === path && s.mappings === size);
        if (!m) return;
        const v = ratios(m)[panel.key];
        out.push(
          `<rect x="${num(gx + si * barWidth)}" y="${num(y(v))}" width="${num(barWidth - 1)}" height="${num(top + plotHeight - y(v))}" fill="${colours[si % colours.length]}"><title>${escape(`${path}, ${size.toLocaleString('en')} NatMappings: ${v}`)}</title></rect>`,
        );
      });
      const words = path.split(' ');
      out.push(
        `<text x="${num(gx + groupWidth * 0.4)}" y="${top + plotHeight + 14}" text-anchor="middle">${words.map((w, i) => `<tspan x="${num(gx + groupWidth * 0.4)}" dy="${i === 0 ? 0 : 12}">${escape(w)}</tspan>`).join('')}</text>`,
      );
    });
  });
  sizes.forEach((size, si) => {
    const lx = left + si * 150;
    out.push(
      `<rect x="${lx}" y="${height - 18}" width="12" height="12" fill="${colours[si % colours.length]}"/>`,
      `<text x="${lx + 16}" y="${height - 8}">${size.toLocaleString('en')} NatMapping${size === 1 ? '' : 's'}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
