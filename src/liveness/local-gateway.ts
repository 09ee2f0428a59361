/**
 * The spec a node applies after its own probes had their say (docs/liveness.md). Inside the cluster the
 * published order of gateways is the active one, then the standbys; a node sends through the first that
 * answers (gateway-choice.ts). Toward a peer, a gateway candidate does the same with the peer's
 * endpoint and its standby addresses. Neither waits for the controller or the API server. Pure.
 */
import type { NodeDataplaneSpec, PeerSpec } from '../nodespec/spec';
import { formatIp } from '../net/cidr';
import type { Verdict } from './detection';
import { chooseGateway } from './gateway-choice';

/** The gateways in failover order. */
export const gatewayOrder = (spec: NodeDataplaneSpec): string[] => [spec.activeGateway.name, ...spec.standbyGateways];

/**
 * A gateway candidate this node does not send through: it translates what arrives at it (a node or a
 * peer whose probes chose it) as the gateway does, so a split view costs nothing; its own pods go
 * through the gateway.
 */
export const isStandby = (spec: NodeDataplaneSpec): boolean =>
  spec.node.role !== 'gateway' && spec.standbyGateways.includes(spec.node.name);

/** A peer gateway's probe target name: its address, kept apart from node names (which never hold ':'). */
const peerTarget = (address: string) => `peer:${address}`;

/**
 * The peers whose gateway a candidate fails over from on its own probes: those with standbys, but not an
 * encrypted peering (its probes would cross the public network in the clear, and its SAs are set up
 * between the published gateways: the controllers' record moves it).
 */
const failsOverLocally = (peers: readonly PeerSpec[]) =>
  peers.filter((p) => p.transport !== 'ipsec' && p.endpoint.standbyAddresses.length > 0);

/** A peer's gateway addresses in failover order. */
const peerOrder = (p: PeerSpec): string[] => [p.endpoint.address, ...p.endpoint.standbyAddresses].map(formatIp);

/**
 * What this node probes, name → address: every gateway of its cluster's order but itself, at its
 * underlay address; and, on a gateway candidate (a node that may send to peers), every peer gateway
 * that has standbys.
 */
export function probeTargets(spec: NodeDataplaneSpec): Map<string, string> {
  const targets = new Map<string, string>();
  const order = gatewayOrder(spec);
  for (const name of order) {
    const node = spec.nodes.find((n) => n.name === name);
    if (node && name !== spec.node.name) targets.set(name, formatIp(node.underlayAddress));
  }
  if (order.includes(spec.node.name))
    for (const p of failsOverLocally(spec.peers)) for (const a of peerOrder(p)) targets.set(peerTarget(a), a);
  return targets;
}

/**
 * `spec` as this node applies it: with the gateway its probes chose as the active one (its own role
 * following from it) and each peer's endpoint the first of its addresses that is not down; `spec`
 * itself when all are the published ones.
 */
export function withLocalGateway(spec: NodeDataplaneSpec, verdicts: ReadonlyMap<string, Verdict>): NodeDataplaneSpec {
  let effective = spec;
  const chosen = chooseGateway(gatewayOrder(spec), spec.node.name, verdicts);
  const node = spec.nodes.find((n) => n.name === chosen);
  if (chosen !== undefined && chosen !== spec.activeGateway.name && node !== undefined)
    effective = {
      ...spec,
      node: { ...spec.node, role: chosen === spec.node.name ? 'gateway' : 'worker' },
      activeGateway: { name: chosen, underlayAddress: node.underlayAddress },
    };
  const peerVerdicts = new Map<string, Verdict>();
  for (const a of spec.peers.flatMap(peerOrder)) {
    const verdict = verdicts.get(peerTarget(a));
    if (verdict !== undefined) peerVerdicts.set(a, verdict);
  }
  const local = new Set(failsOverLocally(spec.peers));
  const peers = spec.peers.map((p) => {
    if (!local.has(p)) return p;
    const order = peerOrder(p);
    const address = chooseGateway(order, '', peerVerdicts);
    if (address === undefined || address === order[0]) return p;
    const index = order.indexOf(address);
    return { ...p, endpoint: { ...p.endpoint, address: p.endpoint.standbyAddresses[index - 1]! } };
  });
  return peers.every((p, i) => p === spec.peers[i]) ? effective : { ...effective, peers };
}

/**
 * What a gateway candidate reports of its probes of the cluster's other candidates (status
 * `gatewayProbes`), sorted by name; nothing from a node that is no candidate (its view would cost a
 * status write per node at each failover) and nothing of a candidate never heard from.
 */
export function gatewayProbeReport(
  spec: NodeDataplaneSpec,
  verdicts: ReadonlyMap<string, Verdict>,
): { name: string; verdict: 'up' | 'down' }[] {
  const order = gatewayOrder(spec);
  if (!order.includes(spec.node.name)) return [];
  return order
    .filter((name) => name !== spec.node.name)
    .sort()
    .flatMap((name) => {
      const verdict = verdicts.get(name);
      return verdict === 'up' || verdict === 'down' ? [{ name, verdict }] : [];
    });
}

/** The gateways a spec sends through: ours, and each peer's endpoint. */
export const chosenGateways = (spec: NodeDataplaneSpec) => ({
  gateway: spec.activeGateway.name,
  peers: Object.fromEntries(spec.peers.map((p) => [p.clusterId, formatIp(p.endpoint.address)])),
});
