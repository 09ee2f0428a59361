/**
 * The wire format of a peering, shared by both dataplanes: the VNI and the inner Ethernet addresses of
 * the VXLAN tunnel between two clusters' gateways are derived from the two cluster ids, so both ends
 * compute the same ones without telling each other, and a gateway on the eBPF datapath and one on the
 * kernel fallback accept each other's frames (docs/datapath.md, docs/kernel-fallback.md).
 */
import { createHash } from 'node:crypto';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** A locally administered unicast MAC that depends only on `parts`. */
export function derivedMac(...parts: string[]): string {
  const d = digest(parts.join('\0'));
  const bytes = [0x02, d[0]!, d[1]!, d[2]!, d[3]!, d[4]!];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/**
 * The VNI of the tunnel between two clusters' gateways: the same at both ends (the pair is ordered),
 * 24 bits, never the intra-cluster overlay's.
 */
export function peeringVni(a: string, b: string, overlayVni: number): number {
  const [x, y] = [a, b].sort();
  const vni = digest(`peering\0${x}\0${y}`).readUIntBE(0, 3) || 1;
  return vni === overlayVni ? (vni % 0xffffff) + 1 : vni;
}

/**
 * `owner`'s MAC on its tunnel toward `peer`: the inner source of the frames `owner` sends to `peer`, and
 * the inner destination of the frames `peer` sends to `owner`.
 */
export const tunnelMac = (owner: string, peer: string) => derivedMac('tunnel', owner, peer);
