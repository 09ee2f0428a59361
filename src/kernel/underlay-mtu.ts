/**
 * The underlay MTU of a node, as its kernel has it: the MTU of the device holding the address its tunnels
 * start from. A gateway's tunnels to peers start from its public address when that is one of its own, so
 * both count and the smaller wins.
 */
import { formatIp } from '../net/cidr';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import { type TunnelMtus, defaultUnderlayMtu, tunnelMtus } from '../nodespec/tunnel-mtu';
import { devicesHolding } from './address-holders';
import { dumpLinks } from './rtnetlink';

/** The smallest MTU among the devices holding one of `addresses`; undefined when none holds any. */
export function deviceMtuOf(addresses: readonly string[], ns?: string): number | undefined {
  const holders = new Set(devicesHolding(addresses, ns));
  if (holders.size === 0) return undefined;
  const mtus = dumpLinks(ns)
    .filter((l) => holders.has(l.ifname))
    .map((l) => l.mtu);
  return mtus.length > 0 ? Math.min(...mtus) : undefined;
}

/** The node's tunnel MTUs: the cluster's override, else derived from its underlay device (`ns`: a namespace by name). */
export function nodeTunnelMtus(spec: NodeDataplaneSpec, ns?: string): TunnelMtus {
  if (spec.tunnelMTU !== undefined) return tunnelMtus(defaultUnderlayMtu, spec.tunnelMTU);
  const sources = [
    spec.node.underlayAddress,
    ...(spec.node.role === 'gateway' && spec.node.publicAddress ? [spec.node.publicAddress] : []),
  ].map(formatIp);
  return tunnelMtus(deviceMtuOf(sources, ns) ?? defaultUnderlayMtu);
}
