/**
 * Builds the lab's networks from network namespaces: a bridge per cluster underlay, a bridge for the
 * public network between nodes, a namespace per node and per pod. Each namespace is configured with one
 * `ip -batch` so a lab of dozens of namespaces comes up in about a second.
 */
import { run } from '../kernel/command';
import { createNetns, deleteNetns } from '../kernel/netns';
import { labPrefix, nodeNetns, podGateway, podNetns, podVeth, publicNetns, switchNetns } from './names';
import type { LabTopology } from './topology';

function batch(netns: string, lines: string[]): void {
  run(['ip', '-n', netns, '-batch', '-'], `${lines.join('\n')}\n`);
}

function sysctl(netns: string, settings: string[]): void {
  run(['ip', 'netns', 'exec', netns, 'sysctl', '-q', '-w', ...settings]);
}

const prefixLength = (cidr: string) => cidr.split('/')[1]!;

function bridge(netns: string): void {
  createNetns(netns);
  batch(netns, ['link set lo up', 'link add br0 type bridge', 'link set br0 up']);
}

export function buildNetworks(topology: LabTopology): void {
  bridge(publicNetns);
  for (const cluster of topology.clusters) {
    bridge(switchNetns(cluster.id));
    for (const node of cluster.nodes) {
      const ns = nodeNetns(node.name);
      createNetns(ns);
      batch(ns, [
        'link set lo up',
        `link add ul0 type veth peer name ${node.name} netns ${switchNetns(cluster.id)}`,
        `link add pub0 type veth peer name ${node.name} netns ${publicNetns}`,
        `addr add ${node.underlayAddress}/${prefixLength(cluster.underlay)} dev ul0`,
        `addr add ${node.publicAddress}/${prefixLength(topology.public)} dev pub0`,
        'link set ul0 up',
        'link set pub0 up',
      ]);
      // Strict reverse-path filtering: symmetric routing through the overlay must make it pass.
      sysctl(ns, ['net.ipv4.ip_forward=1', 'net.ipv4.conf.all.rp_filter=1', 'net.ipv4.conf.default.rp_filter=1']);
      batch(switchNetns(cluster.id), [`link set ${node.name} master br0`, `link set ${node.name} up`]);
      batch(publicNetns, [`link set ${node.name} master br0`, `link set ${node.name} up`]);
      for (const pod of node.pods) {
        createNetns(podNetns(pod.name));
        batch(ns, [
          `link add ${podVeth(pod.name)} type veth peer name eth0 netns ${podNetns(pod.name)}`,
          `addr add ${podGateway}/32 dev ${podVeth(pod.name)}`,
          `link set ${podVeth(pod.name)} up`,
          `route add ${pod.ip}/32 dev ${podVeth(pod.name)}`,
        ]);
        batch(podNetns(pod.name), [
          'link set lo up',
          `addr add ${pod.ip}/32 dev eth0`,
          'link set eth0 up',
          `route add ${podGateway} dev eth0 scope link`,
          `route add default via ${podGateway} dev eth0`,
        ]);
      }
    }
  }
}

/** Every lab namespace on this machine, whichever topology made it (also after a crash). */
export function labNamespaces(): string[] {
  return run(['ip', 'netns', 'list']).split('\n').map((l) => l.split(' ')[0]!).filter((n) => n.startsWith(labPrefix));
}

/** Deletes every lab namespace (their links, qdiscs and filters go with them); returns how many. */
export function removeNetworks(): number {
  const all = labNamespaces();
  for (const ns of all) deleteNetns(ns);
  return all.length;
}
