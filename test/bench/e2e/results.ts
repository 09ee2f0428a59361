/**
 * The e2e bench's measurements, their ratios to the limit measured in the same lab at the same number
 * of NatMappings, and the Markdown table of them (pure).
 */
export interface PathFigures {
  connPerS: number;
  p50Us: number;
  p99Us: number;
  gbps: number;
  /** IPv4 fragments on the lab's bridges during the stream. */
  fragments: number;
  /** eBPF runs only: per Strait program, runs and ns per run over the three tools. */
  bpf?: Record<string, { runs: number; nsPerRun: number }>;
}

export interface Measurement {
  path: string;
  /** The pods' family the path carries (absent: IPv4, as every run before IPv6 was measured). */
  family?: 4 | 6;
  mappings: number;
  figures: PathFigures;
  /** The limit path's figures, measured in the same lab at the same number of NatMappings. */
  limit: PathFigures;
}

/** Each figure over the limit's: conn/s and Gbit/s (higher is better), p99 (lower is better). */
export interface Ratios {
  connPerS: number;
  p99: number;
  gbps: number;
}

const twoDecimals = (x: number) => Math.round(x * 100) / 100;

export const ratios = (m: Measurement): Ratios => ({
  connPerS: twoDecimals(m.figures.connPerS / m.limit.connPerS),
  p99: twoDecimals(m.figures.p99Us / m.limit.p99Us),
  gbps: twoDecimals(m.figures.gbps / m.limit.gbps),
});

const count = (x: number) => Math.round(x).toLocaleString('en');
const fixed = (x: number, digits: number) => x.toFixed(digits);

function bpfText(bpf: PathFigures['bpf']): string {
  if (!bpf || Object.keys(bpf).length === 0) return '';
  return Object.entries(bpf)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, c]) => `${name.replace(/^strait_/, '')} ${c.nsPerRun}`)
    .join(', ');
}

/** One row per measurement, in the order given. */
export function markdownTable(measurements: readonly Measurement[]): string {
  const lines = [
    '| path | NatMappings | conn/s | × limit | p50 µs | p99 µs | × limit | Gbit/s | × limit | fragments | eBPF ns/run |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const m of measurements) {
    const r = ratios(m);
    const f = m.figures;
    lines.push(
      `| ${m.path} | ${count(m.mappings)} | ${count(f.connPerS)} | ${fixed(r.connPerS, 2)} | ${fixed(f.p50Us, 1)} | ${fixed(f.p99Us, 1)} | ${fixed(r.p99, 2)} | ${fixed(f.gbps, 2)} | ${fixed(r.gbps, 2)} | ${count(f.fragments)} | ${bpfText(f.bpf)} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
