/**
 * The map reconciler at scale: a node holding 100,000 NatMappings gets 10,000 of them changed (5,000
 * removed, 5,000 added). Two ways: with a full read of the maps (diffed with the spec's encoded entries),
 * what the agent does at start and at every resync; and incrementally (the spec's tables diffed against
 * what the agent last wrote, src/dataplane/ebpf/map-sync.ts), what it does on every spec change in between.
 */
import { BpfObject } from '../../src/native';
import { AppliedMaps, applyDesiredMaps } from '../../src/dataplane/ebpf/apply-maps';
import { desiredMaps, desiredTables } from '../../src/dataplane/ebpf/desired-maps';
import { datapathObjectPath, openMaps } from '../../src/dataplane/ebpf/layout';
import { type NodeDataplaneSpecDocument, readNodeDataplaneSpec } from '../../src/api/node-dataplane';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';
import { tempPinDir } from '../support/kernel';
import { median, type BenchFigure, type BenchSuite } from './result';

const address = (base: number, i: number) => `${base}.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

/** A hub gateway's spec document with `mappings` NatMappings, numbered from `offset` + 1 (also the idle suite's spec file). */
export function hubSpecDocument(mappings: number, offset: number): NodeDataplaneSpecDocument {
  return {
    clusterId: 'bench',
    podCIDR: '10.0.0.0/16',
    externalCIDR: '11.0.0.0/8',
    transitAddress: '11.255.255.254',
    node: { name: 'gw', role: 'gateway', underlayAddress: '192.0.2.1' },
    activeGateway: { name: 'gw', underlayAddress: '192.0.2.1' },
    overlay: { vni: 1, port: 4789, mac: '02:53:54:00:00:01' },
    peers: [
      {
        clusterId: 'p',
        peerId: 1,
        remotePodCIDR: '10.1.0.0/16',
        remoteExternalCIDR: '10.2.0.0/16',
        localNATPodCIDR: '172.16.0.0/16',
        localNATExternalCIDR: '12.0.0.0/8',
        endpoint: { address: '203.0.113.1', port: 4789 },
        transport: 'vxlan',
      },
    ],
    natMappings: Array.from({ length: mappings }, (_, i) => ({
      externalAddress: address(11, i + offset + 1),
      endpointAddress: address(13, i + offset + 1),
    })),
    nodes: [{ name: 'gw', underlayAddress: '192.0.2.1', podCIDRs: ['10.0.0.0/24'] }],
  };
}

/** The same, typed (also the e2e suite's). */
export const hubSpec = (mappings: number, offset: number): NodeDataplaneSpec => readNodeDataplaneSpec(hubSpecDocument(mappings, offset));

export function timeMs(fn: () => void): number {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/**
 * On fresh maps: 100,000 NatMappings applied to empty maps, then 10,000 of them changed (drops 1..5,000,
 * adds 100,001..105,000), then the same spec again, each reading the maps; then the same two incrementally
 * (from the spec, its tables included: the agent's cost of a changed spec, but for parsing it); milliseconds
 * of each, `rounds` times.
 */
export async function mapApplySamples(
  rounds: number,
): Promise<{ full: number[]; change: number[]; noop: number[]; incrementalChange: number[]; incrementalNoop: number[] }> {
  const samples = {
    full: [] as number[],
    change: [] as number[],
    noop: [] as number[],
    incrementalChange: [] as number[],
    incrementalNoop: [] as number[],
  };
  for (let round = 0; round < rounds; round++) {
    const pins = tempPinDir();
    const obj = await BpfObject.load(datapathObjectPath, { pinRoot: pins.dir });
    try {
      const maps = openMaps(obj);
      const initial = desiredMaps(hubSpec(100_000, 0), 1);
      const changed = desiredMaps(hubSpec(100_000, 5_000), 1);
      samples.full.push(timeMs(() => applyDesiredMaps(maps, initial)));
      samples.change.push(timeMs(() => applyDesiredMaps(maps, changed)));
      samples.noop.push(timeMs(() => applyDesiredMaps(maps, changed)));
      // Incrementally: back to the initial spec with a read (as at start), then the change and the same
      // spec again (a new object, as when a document is re-parsed).
      const applied = new AppliedMaps(maps);
      const specs = { initial: hubSpec(100_000, 0), changed: hubSpec(100_000, 5_000), again: hubSpec(100_000, 5_000) };
      applied.apply(desiredTables(specs.initial, 1, 1450), true);
      samples.incrementalChange.push(timeMs(() => applied.apply(desiredTables(specs.changed, 1, 1450), false)));
      samples.incrementalNoop.push(timeMs(() => applied.apply(desiredTables(specs.again, 1, 1450), false)));
    } finally {
      obj.close();
      pins.cleanup();
    }
  }
  return samples;
}

/** The hub's spec with `peers` peers, each with its two networks in 11.0.0.0/8 and its two views of us (issue 24: checked pairwise, 4,000 took seconds). */
function manyPeersDocument(peers: number): NodeDataplaneSpecDocument {
  const doc = hubSpecDocument(0, 0);
  const peer = doc.peers[0]!;
  return {
    ...doc,
    externalCIDR: '10.2.0.0/16',
    transitAddress: '10.2.255.254',
    peers: Array.from({ length: peers }, (_, i) => ({
      ...peer,
      clusterId: `p${i}`,
      peerId: i + 1,
      remotePodCIDR: `11.${(i >> 7) & 255}.${(i & 127) * 2}.0/24`,
      remoteExternalCIDR: `11.${(i >> 7) & 255}.${(i & 127) * 2 + 1}.0/24`,
      localNATExternalCIDR: '12.0.0.0/16',
    })),
  };
}

export const run: BenchSuite = async () => {
  const reads = { peers: [] as number[], mappings: [] as number[] };
  const [manyPeers, manyMappings] = [manyPeersDocument(4_000), hubSpecDocument(100_000, 0)];
  for (let round = 0; round < 5; round++) {
    reads.peers.push(timeMs(() => readNodeDataplaneSpec(manyPeers)));
    reads.mappings.push(timeMs(() => readNodeDataplaneSpec(manyMappings)));
  }
  const samples = await mapApplySamples(3);
  const figures: BenchFigure[] = [
    {
      suite: 'reconcile',
      name: 'read and check a spec of 4,000 peers',
      value: Math.round(median(reads.peers)),
      unit: 'ms',
      note: 'readNodeDataplaneSpec: schema, then overlaps by binary search (was pairwise)',
    },
    {
      suite: 'reconcile',
      name: 'read and check a spec of 100,000 NatMappings',
      value: Math.round(median(reads.mappings)),
      unit: 'ms',
      note: 'readNodeDataplaneSpec of the parsed document',
    },
    {
      suite: 'reconcile',
      name: 'apply 100,000 NatMappings to empty maps',
      value: Math.round(median(samples.full)),
      unit: 'ms',
      note: 'natmap + natmap_rev, batched',
    },
    {
      suite: 'reconcile',
      name: 'apply 10,000 NatMapping changes to a node holding 100,000',
      value: Math.round(median(samples.change)),
      unit: 'ms',
      note: '5,000 removed + 5,000 added; includes reading and diffing 100,000',
    },
    {
      suite: 'reconcile',
      name: 'apply the same spec again (no change)',
      value: Math.round(median(samples.noop)),
      unit: 'ms',
      note: 'read + diff only: the cost of a resync',
    },
    {
      suite: 'reconcile',
      name: 'apply 10,000 NatMapping changes to a node holding 100,000, incrementally',
      value: Math.round(median(samples.incrementalChange)),
      unit: 'ms',
      note: 'from the spec: its tables, the diff against what was last written, the batched writes; no read',
    },
    {
      suite: 'reconcile',
      name: 'apply the same spec again, incrementally (a new spec object)',
      value: Math.round(median(samples.incrementalNoop)),
      unit: 'ms',
      note: "the spec's tables and the diff; an agent tick with the same object does nothing",
    },
  ];
  return figures;
};
