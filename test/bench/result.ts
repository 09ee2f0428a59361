import { execFileSync } from 'node:child_process';
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

/** The nearest-rank `p`th percentile (0 < p ≤ 100): the smallest sample with at least p% of them at or below it. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0 || !(p > 0 && p <= 100)) throw new Error(`percentile ${p} of ${samples.length} samples`);
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.ceil((p * s.length) / 100) - 1]!;
}

/** Where `npm run bench` writes its results: bench-results/ at the repository's root (from dist/test/bench). */
export const benchResultsDir = join(__dirname, '..', '..', '..', 'bench-results');

/** The commit the bench runs (short hash), for the files it writes. */
export function headCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: __dirname, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
