/**
 * A lab spread over machines (VMs, or real hosts): one machine per node, its NICs on a network per
 * cluster underlay and on the public network. The plan is the one source of what Vagrant, the local VM
 * runner and `strait-lab up --node` must agree on: which NIC is which (by MAC), and its address (pure).
 */
import { InputError } from '../../src/errors';
import type { LabTopology } from './topology';

export interface MachineNic {
  /** The name `strait-lab up --node` gives the interface it finds by `mac`. */
  name: 'ul0' | 'pub0';
  network: string;
  mac: string;
  /** address/prefix length */
  address: string;
}

export interface PlannedMachine {
  name: string;
  cluster: string;
  /** Whether it also runs its cluster's controller (the cluster's first node). */
  controller: boolean;
  nics: [MachineNic, MachineNic];
}

export interface MachinePlan {
  mtu: number;
  networks: { name: string; cidr: string }[];
  machines: PlannedMachine[];
}

export const underlayNetwork = (cluster: string) => `underlay-${cluster}`;
export const publicNetwork = 'public';

/**
 * Locally administered addresses would do, but 52:54:00 is the prefix qemu and libvirt give their NICs,
 * which some tools expect; 5a marks Strait's, then the machine's number (from 1) and the NIC's.
 */
const hexByte = (n: number) => n.toString(16).padStart(2, '0');
const mac = (machine: number, nic: number) => `52:54:00:5a:${hexByte(machine)}:${hexByte(nic)}`;

const withPrefix = (address: string, cidr: string) => `${address}/${cidr.split('/')[1]}`;

export function machinePlan(topology: LabTopology): MachinePlan {
  const machines = topology.clusters.flatMap((cluster) => cluster.nodes.map((node, i) => ({ cluster, node, controller: i === 0 })));
  if (machines.length > 255)
    throw new InputError('clusters', `${machines.length} nodes`, 'a machine plan numbers at most 255 machines (one byte of their MACs)');
  return {
    mtu: topology.mtu,
    networks: [
      { name: publicNetwork, cidr: topology.public },
      ...topology.clusters.map((c) => ({ name: underlayNetwork(c.id), cidr: c.underlay })),
    ],
    machines: machines.map(({ cluster, node, controller }, i) => ({
      name: node.name,
      cluster: cluster.id,
      controller,
      nics: [
        {
          name: 'ul0',
          network: underlayNetwork(cluster.id),
          mac: mac(i + 1, 0),
          address: withPrefix(node.underlayAddress, cluster.underlay),
        },
        { name: 'pub0', network: publicNetwork, mac: mac(i + 1, 1), address: withPrefix(node.publicAddress, topology.public) },
      ],
    })),
  };
}
