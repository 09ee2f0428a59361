/**
 * What a quiet cluster writes to its API server (issue 27: at most one write per minute per node, apart
 * from liveness): the default lab on Kubernetes (eBPF), brought up with its API servers logging every
 * request, left alone until it has settled, then every write over a minute counted from those logs, by
 * who wrote what. Run only when named (`npm run bench -- restwrites`), with no other lab up.
 *
 * Liveness writes nothing at rest since issue 28 (the gateway candidates' Leases, 300 writes a minute
 * each, are gone): what is left is the controllers' leader-election Lease, and each agent's unchanged
 * status every 5 minutes.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { labDown, labUp } from '../../lab/src/lab';
import { defaultTopologyPath } from '../../lab/src/names';
import type { BenchFigure, BenchSuite } from './result';

const runDir = `/run/strait/lab-bench-rest-${process.pid}`;
const settleMs = 30_000;
const windowMs = 60_000;

interface RequestLine {
  msg?: string;
  method?: string;
  user?: string;
  resource?: string;
  subresource?: string;
  name?: string;
}

const leaderLease = 'leader election Lease';
/** Any other Lease: there should be none (a node's liveness is its Node's Ready condition and the probes). */
const otherLease = 'other Lease';

/** What a write is, in a few words: the leader's Lease, another Lease, a status, a spec, an Event. */
function writeKind(l: RequestLine): string {
  if (l.resource === 'leases') return l.name === 'strait-controller' ? leaderLease : otherLease;
  if (l.resource === 'events') return 'Event';
  return `${l.resource ?? 'non-resource'}${l.subresource ? `/${l.subresource}` : ''}`;
}

/** The requests a cluster's API server logged after byte `from` of its log. */
function requestsSince(log: string, from: number): RequestLine[] {
  return readFileSync(log)
    .subarray(from)
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RequestLine)
    .filter((l) => l.msg === 'request');
}

export const run: BenchSuite = async () => {
  const say = (line: string) => process.stderr.write(`  ${line}\n`);
  const level = process.env.STRAIT_LOG_LEVEL;
  // Every process of the lab inherits it: the API servers log each request at debug.
  process.env.STRAIT_LOG_LEVEL = 'debug';
  const figures: BenchFigure[] = [];
  try {
    const topology = await labUp(defaultTopologyPath, { runDir, dataplane: 'ebpf', controlPlane: 'kubernetes', say });
    await sleep(settleMs);
    const logs = topology.clusters.map((c) => join(runDir, 'logs', `apiserver-${c.id}.log`));
    const marks = logs.map((log) => statSync(log).size);
    await sleep(windowMs);
    const nodes = topology.clusters.reduce((sum, c) => sum + c.nodes.length, 0);
    const counts = new Map<string, number>();
    logs.forEach((log, i) => {
      for (const l of requestsSince(log, marks[i]!)) {
        if (l.method === 'GET') continue;
        const kind = writeKind(l);
        counts.set(kind, (counts.get(kind) ?? 0) + 1);
      }
    });
    const perMinute = (n: number) => Math.round((n / (windowMs / 60_000)) * 10) / 10;
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    // Said even when none was written: the figure the issue asks for.
    counts.set(otherLease, counts.get(otherLease) ?? 0);
    const leader = counts.get(leaderLease) ?? 0;
    figures.push(
      {
        suite: 'restwrites',
        name: 'writes per minute per node, all',
        value: perMinute(total / nodes),
        unit: 'writes/min',
        note: `${nodes} nodes, ${topology.clusters.length} clusters`,
      },
      {
        suite: 'restwrites',
        name: 'writes per minute per node, apart from the leader-election Lease',
        value: perMinute((total - leader) / nodes),
        unit: 'writes/min',
      },
      ...[...counts].map(([kind, n]) => ({
        suite: 'restwrites',
        name: `writes per minute: ${kind}`,
        value: perMinute(n),
        unit: 'writes/min',
      })),
    );
  } finally {
    if (level === undefined) delete process.env.STRAIT_LOG_LEVEL;
    else process.env.STRAIT_LOG_LEVEL = level;
    await labDown(runDir, say);
  }
  return figures;
};
