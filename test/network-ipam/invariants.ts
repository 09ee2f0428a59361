/**
 * Invariants of a stored IPAM document, checked independently of the IPAM code (only address parsing is
 * shared), so a bug in the core cannot hide itself. Used by the property tests and the crash test.
 */
import assert from 'node:assert/strict';
import { type Cidr, cidrsOverlap, containsIp, formatCidr, parseCidr, parseIp } from '../../src/net/cidr';
import type { IpamStateDocument as IpamDocument } from '../../src/api/ipam-state';

export function assertDocumentInvariants(doc: IpamDocument): void {
  assert.equal(doc.version, 1);
  const home = doc.home;
  const inUse: { name: string; cidr: Cidr }[] = [
    { name: 'podCIDR', cidr: parseCidr('podCIDR', home.podCIDR) },
    { name: 'externalCIDR', cidr: parseCidr('externalCIDR', home.externalCIDR) },
    ...(home.serviceCIDR ? [{ name: 'serviceCIDR', cidr: parseCidr('serviceCIDR', home.serviceCIDR) }] : []),
    ...(home.reserved ?? []).map((r) => ({ name: 'reserved', cidr: parseCidr('reserved', r) })),
  ];
  for (const peer of doc.peers) {
    const own = [parseCidr('podCIDR', peer.podCIDR), parseCidr('externalCIDR', peer.externalCIDR)];
    const seen = [parseCidr('remotePodCIDR', peer.remotePodCIDR), parseCidr('remoteExternalCIDR', peer.remoteExternalCIDR)];
    seen.forEach((cidr, i) => {
      assert.equal(cidr.prefix, own[i]!.prefix, `peer ${peer.clusterId}: remap changed the prefix length`);
      assert.equal(cidr.family, own[i]!.family, `peer ${peer.clusterId}: remap changed the family`);
      inUse.push({ name: `${peer.clusterId}[${i}]`, cidr });
    });
  }
  for (let i = 0; i < inUse.length; i++) {
    for (let j = i + 1; j < inUse.length; j++) {
      assert.ok(
        !cidrsOverlap(inUse[i]!.cidr, inUse[j]!.cidr),
        `${inUse[i]!.name} ${formatCidr(inUse[i]!.cidr)} overlaps ${inUse[j]!.name} ${formatCidr(inUse[j]!.cidr)}`,
      );
    }
  }
  const podCIDR = inUse[0]!.cidr;
  const externalCIDR = inUse[1]!.cidr;
  const addressOf = new Map<string, string>();
  const endpointOf = new Map<string, string>();
  for (const peer of doc.peers) {
    const seenHere = new Set<string>();
    for (const { endpointIP, externalIP } of peer.natMappings) {
      assert.ok(!seenHere.has(endpointIP), `${endpointIP} mapped twice for ${peer.clusterId}`);
      seenHere.add(endpointIP);
      const ext = parseIp('externalIP', externalIP);
      assert.ok(containsIp(externalCIDR, ext), `${externalIP} outside ${home.externalCIDR}`);
      const size = 1n << BigInt((externalCIDR.family === 4 ? 32 : 128) - externalCIDR.prefix);
      const offset = ext.value - externalCIDR.base;
      if (externalCIDR.family === 4 && externalCIDR.prefix < 31) {
        assert.ok(offset !== 0n && offset !== size - 1n, `${externalIP} is a network or broadcast address`);
        assert.ok(offset !== size - 2n, `${externalIP} is the hub's transit address`);
      } else {
        assert.ok(offset !== size - 1n, `${externalIP} is the hub's transit address`);
      }
      assert.ok(!containsIp(podCIDR, parseIp('endpointIP', endpointIP)), `${endpointIP} is local yet mapped`);
      assert.equal(addressOf.get(endpointIP) ?? externalIP, externalIP, `${endpointIP} has two ExternalCIDR addresses`);
      assert.equal(endpointOf.get(externalIP) ?? endpointIP, endpointIP, `${externalIP} given to two endpoints`);
      addressOf.set(endpointIP, externalIP);
      endpointOf.set(externalIP, endpointIP);
    }
  }
}
