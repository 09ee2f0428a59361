/**
 * The underlay MTU of a node, as its kernel has it: the MTU of the device holding the address its tunnels
 * start from. A gateway's tunnels to peers start from its public address when that is one of its own, so
 * both count and the smaller wins.
 */
import { formatIp } from '../net/cidr';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import { type NodeTunnelMtus, type UnderlayDevice, defaultUnderlayMtu, tunnelMtus } from '../nodespec/tunnel-mtu';
import { devicesHolding } from './address-holders';
import { dumpLinks } from './rtnetlink';

/** The device of the smallest MTU among those holding one of `addresses`; undefined when none holds any. */
export function underlayDeviceOf(addresses: readonly string[], ns?: string): UnderlayDevice | undefined {
  const holders = new Set(devicesHolding(addresses, ns));
  if (holders.size === 0) return undefined;
  return dumpLinks(ns)
    .filter((l) => holders.has(l.ifname))
    .reduce<UnderlayDevice | undefined>(
      (smallest, l) => (smallest && smallest.mtu <= l.mtu ? smallest : { name: l.ifname, mtu: l.mtu }),
      undefined,
    );
}

/**
 * The node's tunnel MTUs: the cluster's override, else derived from its underlay device (`ns`: a namespace
 * by name), less the overhead of an IPv6 outer header where a tunnel may start from an IPv6 address.
 */
export function nodeTunnelMtus(spec: NodeDataplaneSpec, ns?: string): NodeTunnelMtus {
  const sources = [
    spec.node.underlayAddress,
    ...(spec.node.role === 'gateway' && spec.node.publicAddress ? [spec.node.publicAddress] : []),
  ];
  const family = sources.some((a) => a.family === 6) ? 6 : 4;
  if (spec.tunnelMTU !== undefined) return tunnelMtus(defaultUnderlayMtu, spec.tunnelMTU, family);
  const underlay = underlayDeviceOf(sources.map(formatIp), ns);
  return { ...tunnelMtus(underlay?.mtu ?? defaultUnderlayMtu, undefined, family), ...(underlay ? { underlay } : {}) };
}
