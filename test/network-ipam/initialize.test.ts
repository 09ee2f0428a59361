import assert from 'node:assert/strict';
import { InputError, StateError } from '../../src/errors';
import { mapEndpoint } from '../../src/network-ipam/endpoints';
import type { HomeNetworksSpec } from '../../src/api/home-networks';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { addPeer, setRemoteView } from '../../src/network-ipam/peers';
import type { IpamState } from '../../src/network-ipam/state';
import { toDocument } from '../../src/network-ipam/state-document';

const spec: HomeNetworksSpec = {
  podCIDR: '10.0.0.0/16',
  serviceCIDR: '10.96.0.0/12',
  externalCIDR: '10.201.0.0/16',
  reserved: ['10.5.0.0/16'],
};

/** Home with peer b kept as-is at 10.1.0.0/16 + 10.202.0.0/16, its view of us known, one endpoint mapped. */
function running(): IpamState {
  let state = initializeIpam(undefined, spec).state;
  state = addPeer(state, { clusterId: 'b', podCIDR: '10.1.0.0/16', externalCIDR: '10.202.0.0/16' }).state;
  state = setRemoteView(state, { clusterId: 'b', localNATPodCIDR: '10.0.0.0/16', localNATExternalCIDR: '10.201.0.0/16' }).state;
  return mapEndpoint(state, 'b', '10.7.0.9').state;
}

describe('IPAM initialize: restart and migration', () => {
  it('refuses a configuration whose networks overlap, naming both', () => {
    assert.throws(
      () => initializeIpam(undefined, { ...spec, reserved: ['10.0.128.0/17'] }),
      (err: unknown) => err instanceof InputError && err.field === 'reserved[0]' && /overlaps podCIDR 10\.0\.0\.0\/16/.test(err.message),
    );
    assert.throws(
      () => initializeIpam(undefined, { ...spec, externalCIDR: '10.96.0.0/16' }),
      (err: unknown) => err instanceof InputError && err.field === 'externalCIDR',
    );
  });

  it('resumes exactly with the same configuration: same state object, nothing migrated', () => {
    const state = running();
    const again = initializeIpam(state, { ...spec, pools: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fd00::/8'] });
    assert.equal(again.state, state);
    assert.deepEqual(again.result, { created: false, migrated: [] });
  });

  it('migrates an added reserved network that nothing uses, keeping every allocation', () => {
    const state = running();
    const out = initializeIpam(state, { ...spec, reserved: ['10.5.0.0/16', '10.6.0.0/16'] });
    assert.deepEqual(out.result, { created: false, migrated: ['reserved'] });
    const doc = toDocument({ primary: out.state });
    assert.deepEqual(doc.home.reserved, ['10.5.0.0/16', '10.6.0.0/16']);
    assert.deepEqual(doc.peers, toDocument({ primary: state }).peers);
  });

  it('stops with a StateError naming the peer, the network and what to do when a new reserved network is in use', () => {
    const state = running();
    assert.throws(
      () => initializeIpam(state, { ...spec, reserved: ['10.5.0.0/16', '10.1.0.0/20'] }),
      (err: unknown) =>
        err instanceof StateError &&
        err.message.includes('peer b podCIDR is seen as 10.1.0.0/16, which overlaps the new reserved[1] 10.1.0.0/20') &&
        err.message.includes('strait network-ipam peer remove') &&
        err.message.includes('--force'),
    );
  });

  it("migrates a changed PodCIDR and forgets the peers' view of it (they must process our new NetworkConfig)", () => {
    const out = initializeIpam(running(), { ...spec, podCIDR: '10.8.0.0/20' });
    assert.deepEqual(out.result.migrated, ['podCIDR']);
    const peer = toDocument({ primary: out.state }).peers[0]!;
    assert.equal(peer.localNATPodCIDR, null);
    assert.equal(peer.localNATExternalCIDR, '10.201.0.0/16');
    assert.equal(peer.natMappings.length, 1);
  });

  it('stops when a mapped endpoint would become a local pod of the new PodCIDR', () => {
    assert.throws(
      () => initializeIpam(running(), { ...spec, podCIDR: '10.7.0.0/16' }),
      (err: unknown) =>
        err instanceof StateError &&
        err.message.includes('endpoint 10.7.0.9 mapped for peer b would be a local pod of the new podCIDR 10.7.0.0/16'),
    );
  });

  it('stops when the ExternalCIDR changes under existing mappings, and migrates it when there are none', () => {
    assert.throws(
      () => initializeIpam(running(), { ...spec, externalCIDR: '10.203.0.0/16' }),
      (err: unknown) =>
        err instanceof StateError &&
        err.message.includes('peer b has 1 endpoint mappings on addresses of the old externalCIDR 10.201.0.0/16'),
    );
    let state = initializeIpam(undefined, spec).state;
    state = addPeer(state, { clusterId: 'b', podCIDR: '10.1.0.0/16', externalCIDR: '10.202.0.0/16' }).state;
    const out = initializeIpam(state, { ...spec, externalCIDR: '10.203.0.0/24' });
    assert.equal(out.state.external.cidr.prefix, 24);
  });

  it('starts over with force', () => {
    const out = initializeIpam(running(), { ...spec, podCIDR: '10.1.0.0/16' }, true);
    assert.deepEqual(out.result, { created: true, migrated: [] });
    assert.equal(out.state.peers.size, 0);
  });
});
