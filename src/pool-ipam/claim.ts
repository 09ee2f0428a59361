/**
 * An IPClaim as the pool IPAM reads it, and the object name of an address: the dotted quad for IPv4
 * (already a DNS-1123 subdomain), the eight hexadecimal groups joined by "-" for IPv6 (":" is not allowed
 * in a name; every group is written, so no two addresses share a name).
 */
import type { IPClaimSpecDocument } from '../api/ip-claim';
import { type Ip, formatIp, parseIp } from '../net/cidr';
import type { ApplicationRef } from './model';

export interface Claim {
  name: string;
  uid: string;
  resourceVersion: string;
  /** ms since the epoch (metadata.creationTimestamp). */
  created: number;
  address: Ip;
  pool: string;
  podNamespace: string;
  podName: string;
  podUID: string;
  node: string;
  network: string;
  ifname: string;
  containerID?: string;
  owner?: Omit<ApplicationRef, 'namespace'>;
  conflict?: { mac?: string; detectedAt: number };
}

export function claimName(address: Ip): string {
  if (address.family === 4) return formatIp(address);
  const groups: string[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(((address.value >> shift) & 0xffffn).toString(16));
  return groups.join('-');
}

interface ClaimObject {
  metadata?: { name?: string; uid?: string; resourceVersion?: string; creationTimestamp?: string | Date };
  spec?: IPClaimSpecDocument;
}

/** The claim of an IPClaim object the API server accepted (so its schema holds). */
export function readClaim(object: ClaimObject): Claim {
  const spec = object.spec!;
  const meta = object.metadata ?? {};
  const created = meta.creationTimestamp === undefined ? 0 : new Date(meta.creationTimestamp).getTime();
  return {
    name: meta.name ?? '',
    uid: meta.uid ?? '',
    resourceVersion: meta.resourceVersion ?? '',
    created,
    address: parseIp('spec.address', spec.address),
    pool: spec.pool,
    podNamespace: spec.podNamespace,
    podName: spec.podName,
    podUID: spec.podUID,
    node: spec.node,
    network: spec.network,
    ifname: spec.ifname,
    ...(spec.containerID !== undefined ? { containerID: spec.containerID } : {}),
    ...(spec.owner !== undefined ? { owner: spec.owner } : {}),
    ...(spec.conflict !== undefined
      ? { conflict: { ...(spec.conflict.mac ? { mac: spec.conflict.mac } : {}), detectedAt: new Date(spec.conflict.detectedAt).getTime() } }
      : {}),
  };
}

export function writeClaimSpec(claim: Omit<Claim, 'name' | 'uid' | 'resourceVersion' | 'created'>): IPClaimSpecDocument {
  return {
    address: formatIp(claim.address),
    pool: claim.pool,
    podNamespace: claim.podNamespace,
    podName: claim.podName,
    podUID: claim.podUID,
    node: claim.node,
    network: claim.network,
    ifname: claim.ifname,
    ...(claim.containerID !== undefined ? { containerID: claim.containerID } : {}),
    ...(claim.owner !== undefined ? { owner: claim.owner } : {}),
    ...(claim.conflict !== undefined
      ? {
          conflict: {
            ...(claim.conflict.mac ? { mac: claim.conflict.mac } : {}),
            detectedAt: new Date(claim.conflict.detectedAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
          },
        }
      : {}),
  };
}
