/**
 * The xfrm states and policies of a gateway (docs/kernel-fallback.md, "IPsec selectors"): pure, from the
 * node spec, the gateway's public address and the secrets of the encrypted peerings.
 *
 * Selectors use the addresses as they are on the wire between the gateways: our networks as the peer sees
 * them (localNAT*) and the peer's networks as we see them (remote*). The NAT runs on this gateway, and
 * the kernel looks policies up on exactly those addresses:
 * - out: the SNAT to localNAT* happens in postrouting, after the forwarding lookup; netfilter then looks
 *   the policy up again on the translated packet (nf_xfrm_me_harder), so the source is localNAT*.
 * - in/fwd: the decrypted packet is DNATed from localNAT* to our home networks in prerouting, but the
 *   policy check undoes the NAT for its lookup (nf_nat_decode_session), so the destination is localNAT*.
 * The peer's out selectors are therefore exactly our in/fwd selectors, and no selector names a home
 * network, which may overlap the peer's.
 *
 * Each family the peering carries gets its own policies (selectors are of one family), all through the
 * same two states: the tunnel is IPv4 whatever the inner family, and a state without a selector family
 * (ipsec-apply.ts: XFRM_STATE_AF_UNSPEC) carries inner packets of both.
 */
import { InputError } from '../../errors';
import { formatCidr, formatIp } from '../../net/cidr';
import { familiesOf, peerNetworks } from '../../nodespec/families';
import type { NodeDataplaneSpec, PeerFamilyNetworks, PeerSpec } from '../../nodespec/spec';
import { type Secret, derivePeeringKeys } from './ipsec-keys';

/** Strait's xfrm entries carry reqid 0x5354xxxx ("ST"); xxxx is the peer id's low 16 bits. */
const reqidPrefix = 0x5354_0000;
const reqidMask = 0xffff_0000;

export const isStraitReqid = (reqid: number) => (reqid & reqidMask) >>> 0 === reqidPrefix;

/**
 * Two peers may share the low 16 bits; that is harmless because the kernel matches a policy's template
 * to a state on the addresses as well as the reqid, and peers have different endpoints.
 */
const peerReqid = (peerId: number) => (reqidPrefix | (peerId & 0xffff)) >>> 0;

export interface XfrmStateSpec {
  /** The peer's cluster id, for messages. */
  peer: string;
  src: string;
  dst: string;
  spi: number;
  reqid: number;
  /** The peer's xfrm interface (its peer id): decrypted packets appear on it. */
  ifId: number;
  key: Secret;
}

type PolicyDir = 'out' | 'in' | 'fwd';

export interface XfrmPolicySpec {
  peer: string;
  dir: PolicyDir;
  /** Selector prefixes. */
  src: string;
  dst: string;
  /** Tunnel endpoints of the template. */
  tmplSrc: string;
  tmplDst: string;
  reqid: number;
  /** The peer's xfrm interface (its peer id): only traffic routed into it is matched. */
  ifId: number;
}

export interface IpsecPlan {
  states: XfrmStateSpec[];
  policies: XfrmPolicySpec[];
}

/** A family's networks of a peering as the packets between the gateways carry them: ours in the peer's view, theirs in ours. */
const wireView = (n: PeerFamilyNetworks) => ({
  ours: [n.localNATPodCIDR, n.localNATExternalCIDR].map(formatCidr),
  theirs: [n.remotePodCIDR, n.remoteExternalCIDR].map(formatCidr),
});

function planPeer(spec: NodeDataplaneSpec, peer: PeerSpec, local: string, secret: Secret): IpsecPlan {
  const remote = formatIp(peer.endpoint.address);
  const reqid = peerReqid(peer.peerId);
  const ifId = peer.peerId;
  const keys = derivePeeringKeys(secret, spec.clusterId, peer.clusterId);
  const states: XfrmStateSpec[] = [
    { peer: peer.clusterId, src: local, dst: remote, spi: keys.forward.spi, reqid, ifId, key: keys.forward.key },
    { peer: peer.clusterId, src: remote, dst: local, spi: keys.reverse.spi, reqid, ifId, key: keys.reverse.key },
  ];
  const policies: XfrmPolicySpec[] = [];
  // The spec's families in its order (primary first), each one the peering carries (by value, wherever the peering keeps it).
  const carried = familiesOf(spec).flatMap((family) => peerNetworks(peer, family) ?? []);
  for (const networks of carried) {
    const { ours, theirs } = wireView(networks);
    for (const src of ours) {
      for (const dst of theirs) {
        policies.push({ peer: peer.clusterId, dir: 'out', src, dst, tmplSrc: local, tmplDst: remote, reqid, ifId });
        for (const dir of ['in', 'fwd'] as const) {
          policies.push({ peer: peer.clusterId, dir, src: dst, dst: src, tmplSrc: remote, tmplDst: local, reqid, ifId });
        }
      }
    }
  }
  return { states, policies };
}

/** Where this gateway's ESP packets start and the peers send theirs: the address peers know it by. */
const ipsecLocalAddress = (spec: NodeDataplaneSpec) => spec.node.publicAddress ?? spec.node.underlayAddress;

/**
 * `secrets` holds the secrets of the encrypted peers (transport ipsec) to set up, by peer cluster id;
 * an encrypted peer without one is left out (the caller blocks its traffic). Only the gateway
 * encrypts; a worker's plan is empty.
 */
export function planIpsec(spec: NodeDataplaneSpec, secrets: ReadonlyMap<string, Secret>): IpsecPlan {
  const plan: IpsecPlan = { states: [], policies: [] };
  if (spec.node.role !== 'gateway') return plan;
  const local = formatIp(ipsecLocalAddress(spec));
  for (const clusterId of secrets.keys()) {
    const peer = spec.peers.find((p) => p.clusterId === clusterId);
    if (!peer) throw new InputError('secrets', clusterId, 'no peer of the spec has this cluster id');
    if (peer.transport !== 'ipsec') throw new InputError('secrets', clusterId, `the peering's transport is ${peer.transport}, not ipsec`);
  }
  // A spec's remote prefixes are disjoint (src/api/node-dataplane.ts), so no two peers' out policies clash.
  for (const peer of spec.peers) {
    const secret = secrets.get(peer.clusterId);
    if (!secret) continue;
    const part = planPeer(spec, peer, local, secret);
    plan.states.push(...part.states);
    plan.policies.push(...part.policies);
  }
  return plan;
}
