/**
 * Starting the IPAM with a home configuration, on a fresh or an existing state. Liqo's IPAM crash-looped
 * when restarted with reserved subnets or a changed PodCIDR; here a restart either resumes (same
 * configuration: nothing changes), migrates (changed, no allocation in the way), or stops with a
 * StateError naming each conflict and what to do. It never half-applies a configuration.
 */
import { StateError } from '../errors';
import { cidrsEqual, cidrsOverlap, containsIp, formatCidr, parseIp } from '../net/cidr';
import { emptyExternalAddresses } from './external-addresses';
import { type HomeNetworks, type HomeNetworksSpec, homeNetworksSpec, namedHomeNetworks, parseHomeNetworks } from '../api/home-networks';
import { type IpamState, type Outcome, type PeerRecord, emptyIpamState } from './state';

export interface InitializeResult {
  /** True when a new state was made (none before, or --force). */
  created: boolean;
  /** Home settings that changed on an existing state, e.g. ["podCIDR", "reserved"]. */
  migrated: string[];
}

/** `at`: where the family's networks sit in the settings, for error messages (`secondary.`: src/network-ipam/planes.ts). */
export function initializeIpam(existing: IpamState | undefined, spec: HomeNetworksSpec, force = false, at = ''): Outcome<InitializeResult> {
  const home = parseHomeNetworks(spec, at);
  if (!existing || force) return { state: emptyIpamState(home), result: { created: true, migrated: [] } };
  const before = homeNetworksSpec(existing.home);
  const after = homeNetworksSpec(home);
  const keys = new Set([...Object.keys(before), ...Object.keys(after)] as (keyof HomeNetworksSpec)[]);
  const migrated = [...keys].filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]));
  if (migrated.length === 0) return { state: existing, result: { created: false, migrated } };

  const conflicts = conflictsWith(existing, home);
  if (conflicts.length > 0) {
    throw new StateError(
      `the new home configuration (${migrated.join(', ')} changed) conflicts with the state: ${conflicts.join('; ')}. ` +
        'Remove those peers or mappings first (strait network-ipam peer remove / unmap-endpoint), then run init again; ' +
        'or keep the old configuration; or start over with `strait network-ipam init --force`, which forgets every peer and mapping',
    );
  }
  const podChanged = !cidrsEqual(existing.home.podCIDR, home.podCIDR);
  const externalChanged = !cidrsEqual(existing.home.externalCIDR, home.externalCIDR);
  let peers = existing.peers;
  // A peer's remap of our networks was decided for the old ones: it must process our new NetworkConfig.
  for (const peer of podChanged || externalChanged ? existing.peers.values() : []) {
    const { localNATPodCIDR, localNATExternalCIDR, ...rest } = peer;
    const updated: PeerRecord = {
      ...rest,
      ...(podChanged || !localNATPodCIDR ? {} : { localNATPodCIDR }),
      ...(externalChanged || !localNATExternalCIDR ? {} : { localNATExternalCIDR }),
    };
    peers = peers.set(peer.clusterId, updated);
  }
  const external = externalChanged ? emptyExternalAddresses(home.externalCIDR) : existing.external;
  return { state: { home, peers, external }, result: { created: false, migrated } };
}

/** Everything in the state that the new home networks would collide with, as sentences. */
function conflictsWith(state: IpamState, home: HomeNetworks): string[] {
  const conflicts: string[] = [];
  const homeNetworks = namedHomeNetworks(home);
  for (const peer of state.peers.values()) {
    for (const [name, cidr] of [
      ['podCIDR', peer.remotePodCIDR],
      ['externalCIDR', peer.remoteExternalCIDR],
    ] as const) {
      for (const clash of homeNetworks.filter((h) => cidrsOverlap(h.cidr, cidr))) {
        conflicts.push(
          `peer ${peer.clusterId} ${name} is seen as ${formatCidr(cidr)}, which overlaps the new ${clash.name} ${formatCidr(clash.cidr)}`,
        );
      }
    }
    if (peer.natMappings.size > 0 && !cidrsEqual(state.home.externalCIDR, home.externalCIDR)) {
      conflicts.push(
        `peer ${peer.clusterId} has ${peer.natMappings.size} endpoint mappings on addresses of the old externalCIDR ${formatCidr(state.home.externalCIDR)}`,
      );
    }
    if (cidrsEqual(state.home.podCIDR, home.podCIDR)) continue;
    for (const [endpoint] of peer.natMappings.entries()) {
      if (containsIp(home.podCIDR, parseIp('endpoint', endpoint))) {
        conflicts.push(
          `endpoint ${endpoint} mapped for peer ${peer.clusterId} would be a local pod of the new podCIDR ${formatCidr(home.podCIDR)}`,
        );
      }
    }
  }
  return conflicts;
}
