/** What an agent left on a test node: its attachments, the peers in its pinned strait_peers map and the node routes in strait_nodes. */
import { join } from 'node:path';
import { BpfMap, type Codec, type CodecValue, ifIndex, queryTcx } from '../../src/native';
import * as layout from '../../src/dataplane/ebpf/layout';
import { findAttachments } from '../../src/dataplane/ebpf/attachments';
import { netnsPath } from '../../src/kernel/netns';

/** Runs `use` on a pinned map of the node, closing it after. */
export function withMap<K, V, T>(
  pinRoot: string,
  spec: { name: string; key: Codec<K>; value: Codec<V> },
  use: (map: BpfMap<K, V>) => T,
): T {
  const map = BpfMap.openPinned(join(pinRoot, spec.name), spec.key, spec.value);
  try {
    return use(map);
  } finally {
    map.close();
  }
}

export const withPeers = <T>(pinRoot: string, use: (peers: BpfMap<number, CodecValue<typeof layout.peer>>) => T): T =>
  withMap(pinRoot, layout.maps.peers, use);

/** The peer ids in strait_peers, ascending. */
export const peerIds = (pinRoot: string): number[] => withPeers(pinRoot, (m) => [...m.keys()].sort((a, b) => a - b));

/** The pinned attachments as "interface:program", sorted. */
export const attachments = (pinRoot: string, netns: string): string[] =>
  findAttachments(pinRoot, netnsPath(netns))
    .map((a) => `${a.interface}:${a.program}`)
    .sort();

/** The pod prefixes of the nodes in strait_nodes as "prefix underlay", sorted. */
export const nodeRoutes = (pinRoot: string): string[] =>
  withMap(pinRoot, layout.maps.nodes, (m) => [...m.entries()].map(([k, v]) => `${k.addr}/${k.prefixLen} ${v.underlay}`).sort());

/**
 * The tcx attachments the kernel runs, as "interface:program", sorted: a link detached by hand, or whose
 * device was deleted, stays pinned (so findAttachments still lists it) but is attached to nothing (ifindex 0).
 */
export const liveAttachments = (pinRoot: string, netns: string): string[] =>
  findAttachments(pinRoot, netnsPath(netns))
    .filter(
      (a) =>
        a.kind === 'tcx' &&
        queryTcx(join(pinRoot, 'links', `${a.direction}_${a.interface}`))?.ifindex === ifIndex(a.interface, netnsPath(netns)),
    )
    .map((a) => `${a.interface}:${a.program}`)
    .sort();
