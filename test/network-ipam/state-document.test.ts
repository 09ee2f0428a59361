import assert from 'node:assert/strict';
import { StateError } from '../../src/errors';
import { mapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { addPeer, setRemoteView } from '../../src/network-ipam/peers';
import type { IpamStateDocument as IpamDocument } from '../../src/api/ipam-state';
import { fromDocument, toDocument } from '../../src/network-ipam/state-document';

function sampleDocument(): IpamDocument {
  let state = initializeIpam(undefined, { podCIDR: '10.0.0.0/24', externalCIDR: '192.168.0.0/24' }).state;
  for (const id of ['a', 'c']) {
    state = addPeer(state, { clusterId: id, podCIDR: '10.0.0.0/24', externalCIDR: '192.168.0.0/24' }).state;
    state = setRemoteView(state, { clusterId: id, localNATPodCIDR: '10.9.0.0/24', localNATExternalCIDR: '10.9.1.0/24' }).state;
  }
  state = mapEndpoint(state, 'a', '10.1.0.5').state;
  state = mapEndpoint(state, 'c', '10.1.0.5').state;
  state = mapEndpoint(state, 'c', '10.1.0.6').state;
  return toDocument({ primary: state });
}

function refused(mutate: (doc: IpamDocument) => void, pattern: RegExp): void {
  const doc = structuredClone(sampleDocument());
  mutate(doc);
  assert.throws(
    () => fromDocument(JSON.parse(JSON.stringify(doc))),
    (err: unknown) => err instanceof StateError && pattern.test(err.message) && /init --force/.test(err.message),
  );
}

describe('IPAM state document', () => {
  it('round-trips exactly, with the allocation table rebuilt from the NatMappings', () => {
    const doc = sampleDocument();
    assert.deepEqual(
      doc.peers.map((p) => [p.clusterId, p.remotePodCIDR, p.remoteExternalCIDR]),
      [
        ['a', '10.0.1.0/24', '10.0.2.0/24'],
        ['c', '10.0.3.0/24', '10.0.4.0/24'],
      ],
    );
    const planes = fromDocument(JSON.parse(JSON.stringify(doc)));
    assert.deepEqual(toDocument(planes), doc);
    assert.deepEqual(planes.primary.external.byEndpoint.get('10.1.0.5'), { address: 0xc0a80001n, reflections: 2 });
    assert.equal(planes.primary.external.used.lowestFree(), 3n);
  });

  it('round-trips a dual-stack state: the secondary plane with its own home, peers and IPv6 NatMappings', () => {
    const doc = {
      ...sampleDocument(),
      secondary: {
        home: { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120', reserved: [], pools: ['fd00::/8'] },
        peers: [
          {
            clusterId: 'a',
            podCIDR: 'fd00:a::/48',
            externalCIDR: 'fd00:fe::/120',
            remotePodCIDR: 'fd00::/48',
            remoteExternalCIDR: 'fd00:fe::/120',
            localNATPodCIDR: 'fd00:1::/48',
            localNATExternalCIDR: 'fd00:fd::/120',
            natMappings: [{ externalIP: 'fd00:ff::1', endpointIP: 'fd00:99::5' }],
          },
        ],
      },
    };
    const planes = fromDocument(JSON.parse(JSON.stringify(doc)));
    assert.deepEqual(toDocument(planes), doc);
    assert.equal(planes.secondary!.external.byEndpoint.get('fd00:99::5')?.address, 0xfd0000ff_00000000_00000000_00000001n);
    // Each plane checks its own invariants: an IPv6 peer network over our IPv6 PodCIDR is refused, named.
    const bad = structuredClone(doc);
    bad.secondary.peers[0]!.remotePodCIDR = 'fd00:a::/48';
    assert.throws(() => fromDocument(bad), /peer a podCIDR is seen as fd00:a::\/48, which overlaps podCIDR fd00:a::\/48/);
    const sameFamily = structuredClone(doc);
    sameFamily.secondary.home = { ...sameFamily.home, reserved: [] };
    sameFamily.secondary.peers = [];
    assert.throws(() => fromDocument(sameFamily), /secondary\.home\.podCIDR: is IPv4, as home\.podCIDR 10\.0\.0\.0\/24 is/);
  });

  it('refuses another version, overlapping networks, an address given twice or unusable, a wrong-size view', () => {
    refused((d) => Object.assign(d, { version: 2 }), /state version 2 is not supported/);
    refused((d) => (d.peers[1]!.remotePodCIDR = '10.0.1.0/24'), /peer c podCIDR is seen as 10\.0\.1\.0\/24, which overlaps peer a podCIDR/);
    refused((d) => (d.peers[1]!.natMappings[1]!.externalIP = '192.168.0.1'), /192\.168\.0\.1 is given to both 10\.1\.0\.5 and 10\.1\.0\.6/);
    refused((d) => (d.peers[0]!.natMappings[0]!.externalIP = '192.168.0.9'), /endpoint 10\.1\.0\.5 has two ExternalCIDR addresses/);
    refused((d) => (d.peers[0]!.natMappings[0]!.externalIP = '192.168.0.255'), /not a usable address/);
    refused((d) => (d.peers[0]!.natMappings[0]!.endpointIP = '10.0.0.5'), /is a local pod/);
    refused((d) => (d.peers[0]!.localNATPodCIDR = '10.9.0.0/16'), /localNATPodCIDR 10\.9\.0\.0\/16 is not the size of 10\.0\.0\.0\/24/);
    refused((d) => (d.peers[0]!.remotePodCIDR = '10.0.8.0/23'), /remotePodCIDR 10\.0\.8\.0\/23 is not the size/);
    refused((d) => (d.home.reserved = ['10.0.0.0/8']), /overlaps podCIDR/);
    refused((d) => (d.peers[1]!.clusterId = 'a'), /listed twice/);
    refused((d) => (d.peers[0]!.remoteExternalCIDR = d.peers[0]!.remotePodCIDR), /peer a podCIDR and externalCIDR overlap as seen here/);
    refused((d) => d.peers[1]!.natMappings.push({ ...d.peers[1]!.natMappings[0]! }), /endpoint 10\.1\.0\.5 is mapped twice for peer c/);
    refused(
      (d) => (d.peers[0]!.natMappings[0]!.endpointIP = '224.0.0.1'),
      /peers\[0\]\.natMappings\[0\]\.endpointIP: is in 224\.0\.0\.0\/4, multicast.*\(got "224\.0\.0\.1"\)/,
    );
  });
});
