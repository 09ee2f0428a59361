/**
 * The probe's report kept for the rest of the boot, so a restarted agent starts without probing again
 * (the probe makes and deletes devices and runs `ip` and `nft`: tens of milliseconds idle, up to seconds
 * on a loaded node). What the probe finds can change only with the kernel (a reboot, another kernel),
 * with the probe's own code, or with what this process may do (its capabilities); the report is kept
 * under that key and used only when every part of it is the same. A file that does not parse, or holds
 * a report of another shape, is probed over. Written atomically: a reader never sees half a file.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { release } from 'node:os';
import { writeFileAtomic } from '../store/atomic-file';
import { type ProbeReport, featureNames } from './features';
import { probeKernel } from './probe';

/** Where the agent keeps it by default: /run is cleared at boot, as the report's validity is. */
export const defaultProbeCachePath = '/run/strait/probe-cache.json';

export interface ProbeCacheKey {
  /** /proc/sys/kernel/random/boot_id: a new one at every boot. */
  bootId: string;
  /** uname -r. */
  kernel: string;
  /** The package version and a digest of the probe's code as built, so a changed probe probes again. */
  build: string;
  /** The effective capabilities of this process (CapEff): a probe refused EPERM says nothing of another. */
  capabilities: string;
}

const probeBuild = (): string => {
  const digest = createHash('sha256');
  for (const module of ['./probe', './features']) digest.update(readFileSync(require.resolve(module)));
  const { version } = require('../../../package.json') as { version: string };
  return `${version}+${digest.digest('hex').slice(0, 16)}`;
};

export function probeCacheKey(): ProbeCacheKey {
  return {
    bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
    kernel: release(),
    build: probeBuild(),
    capabilities: /^CapEff:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 'unknown',
  };
}

const sameKey = (a: ProbeCacheKey, b: unknown): boolean =>
  typeof b === 'object' &&
  b !== null &&
  (Object.keys(a) as (keyof ProbeCacheKey)[]).every((k) => (b as Record<string, unknown>)[k] === a[k]);

/** Pure: the report in a cache file's text when its key is `key` and the report is whole; otherwise undefined. */
function readCachedReport(text: string, key: ProbeCacheKey): ProbeReport | undefined {
  let parsed: { key?: unknown; report?: { features?: Record<string, unknown>; reasons?: Record<string, unknown> } };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    return undefined;
  }
  if (!sameKey(key, parsed?.key)) return undefined;
  const { features, reasons } = parsed.report ?? {};
  if (typeof features !== 'object' || features === null || typeof reasons !== 'object' || reasons === null) return undefined;
  if (!featureNames.every((f) => typeof features[f] === 'boolean') || Object.keys(features).length !== featureNames.length)
    return undefined;
  if (!Object.entries(reasons).every(([f, why]) => (featureNames as readonly string[]).includes(f) && typeof why === 'string'))
    return undefined;
  return parsed.report as ProbeReport;
}

export interface CachedProbe {
  report: ProbeReport;
  /** `cached`: read from the file; `probed`: the kernel was tried (and the file written). */
  source: 'cached' | 'probed';
  /** Why the report could not be stored (the probe itself succeeded): the next start probes again. */
  writeError?: string;
}

/** The probe's report from `path` when it holds one for this boot, kernel, build and privileges; else probes in `netns` and stores it. */
export async function cachedProbe(
  path: string,
  netns?: string,
  probe: (netns?: string) => Promise<ProbeReport> = probeKernel,
): Promise<CachedProbe> {
  const key = probeCacheKey();
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    // None yet (first start of this boot), or unreadable: probed below.
  }
  const cached = text === undefined ? undefined : readCachedReport(text, key);
  if (cached) return { report: cached, source: 'cached' };
  const report = await probe(netns);
  try {
    writeFileAtomic(path, `${JSON.stringify({ key, report }, null, 2)}\n`);
  } catch (err) {
    return { report, source: 'probed', writeError: err instanceof Error ? err.message : String(err) };
  }
  return { report, source: 'probed' };
}
