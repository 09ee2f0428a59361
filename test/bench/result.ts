import { join } from 'node:path';

/** One measured figure. Ratios are computed against a baseline measured in the same run. */
export interface BenchFigure {
  suite: string;
  name: string;
  value: number;
  unit: string;
  note?: string;
}

export type BenchSuite = () => Promise<BenchFigure[]>;

/** Median of repeated samples: robust against one slow run on a shared 2-core machine. */
export function median(samples: number[]): number {
  const s = [...samples].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Where `npm run bench` writes its results: bench-results/ at the repository's root (from dist/test/bench). */
export const benchResultsDir = join(__dirname, '..', '..', '..', 'bench-results');
