import assert from 'node:assert/strict';
import { InputError, StateError } from '../../src/errors';
import { mapEndpoint, natMappingsOf, unmapEndpoint } from '../../src/network-ipam/endpoints';
import { parseHomeNetworks } from '../../src/api/home-networks';
import { addPeer, removePeer, setRemoteView } from '../../src/network-ipam/peers';
import { type IpamState, emptyIpamState } from '../../src/network-ipam/state';

/** Cluster B of the docs/network-ipam.md example: PodCIDR 10.0.0.0/24, ExternalCIDR 192.168.0.0/24, peered with A and C. */
function clusterB(): IpamState {
  let state = emptyIpamState(parseHomeNetworks({ podCIDR: '10.0.0.0/24', externalCIDR: '192.168.0.0/24', pools: ['10.0.0.0/8'] }));
  state = addPeer(state, { clusterId: 'a', podCIDR: '10.0.0.0/24', externalCIDR: '10.200.0.0/24' }).state;
  state = addPeer(state, { clusterId: 'c', podCIDR: '10.1.0.0/24', externalCIDR: '192.168.0.0/24' }).state;
  // A sees B as it is; C has remapped both of B's networks (they collide with C's own).
  state = setRemoteView(state, { clusterId: 'a', localNATPodCIDR: '10.0.0.0/24', localNATExternalCIDR: '192.168.0.0/24' }).state;
  state = setRemoteView(state, { clusterId: 'c', localNATPodCIDR: '10.55.0.0/24', localNATExternalCIDR: '10.56.0.0/24' }).state;
  return state;
}

function mapOk(state: IpamState, cluster: string, ip: string): { state: IpamState; ip: string } {
  const out = mapEndpoint(state, cluster, ip);
  return { state: out.state, ip: out.result.ip };
}

describe('IPAM endpoints: reflection', () => {
  it("the docs/network-ipam.md example: C's pod 10.1.0.5 reflected into A gets 192.168.0.45 after 44 other endpoints", () => {
    let state = clusterB();
    for (let i = 1; i <= 44; i++) state = mapOk(state, 'a', `10.1.0.${100 + i}`).state;
    const got = mapOk(state, 'a', '10.1.0.5');
    assert.equal(got.ip, '192.168.0.45');
    assert.deepEqual(natMappingsOf(got.state.peers.get('a')!, 4).at(-1), { externalIP: '192.168.0.45', endpointIP: '10.1.0.5' });
  });

  it("gives a non-local endpoint one ExternalCIDR address for every peer, in each peer's view", () => {
    let state = clusterB();
    const toA = mapOk(state, 'a', '10.1.0.5');
    assert.equal(toA.ip, '192.168.0.1', 'lowest free, the network address .0 skipped');
    state = toA.state;
    const toC = mapOk(state, 'c', '10.1.0.5');
    assert.equal(toC.ip, '10.56.0.1', "same address .1, in C's remap of our ExternalCIDR");
    state = toC.state;
    assert.equal(state.external.byEndpoint.get('10.1.0.5')?.reflections, 2);
    const again = mapEndpoint(state, 'a', '10.1.0.5');
    assert.equal(again.state, state, 'mapping again changes nothing');
    assert.equal(again.result.ip, '192.168.0.1');
  });

  it("translates a local pod into the peer's view of our PodCIDR, with no allocation", () => {
    const state = clusterB();
    const toC = mapEndpoint(state, 'c', '10.0.0.34');
    assert.equal(toC.result.ip, '10.55.0.34');
    assert.equal(toC.state, state);
    assert.equal(mapEndpoint(state, 'a', '10.0.0.34').result.ip, '10.0.0.34');
  });

  it('releases the ExternalCIDR address with the last reflection only, then reuses it', () => {
    let state = clusterB();
    state = mapOk(state, 'a', '10.1.0.5').state;
    state = mapOk(state, 'c', '10.1.0.5').state;
    state = mapOk(state, 'a', '10.1.0.6').state;
    const first = unmapEndpoint(state, 'a', '10.1.0.5');
    assert.deepEqual(first.result, { removed: true, freedExternalIP: null });
    const last = unmapEndpoint(first.state, 'c', '10.1.0.5');
    assert.deepEqual(last.result, { removed: true, freedExternalIP: '192.168.0.1' });
    assert.deepEqual(unmapEndpoint(last.state, 'c', '10.1.0.5').result, { removed: false, freedExternalIP: null });
    assert.equal(mapOk(last.state, 'a', '10.9.9.9').ip, '192.168.0.1');
    assert.equal(mapOk(last.state, 'a', '10.1.0.6').ip, '192.168.0.2');
  });

  it('lists NatMappings per peer in address order, and removing a peer releases its addresses', () => {
    let state = clusterB();
    for (const ip of ['10.1.0.9', '10.1.0.7', '10.1.0.8']) state = mapOk(state, 'a', ip).state;
    state = mapOk(state, 'c', '10.1.0.7').state;
    assert.deepEqual(natMappingsOf(state.peers.get('a')!, 4), [
      { externalIP: '192.168.0.1', endpointIP: '10.1.0.9' },
      { externalIP: '192.168.0.2', endpointIP: '10.1.0.7' },
      { externalIP: '192.168.0.3', endpointIP: '10.1.0.8' },
    ]);
    state = removePeer(state, 'a').state;
    assert.deepEqual([...state.external.byEndpoint.entries()], [['10.1.0.7', { address: 0xc0a80002n, reflections: 1 }]]);
    assert.equal(mapOk(state, 'c', '10.1.0.1').ip, '10.56.0.1');
  });

  it('fails clearly before the peer has told how it sees us, naming the peer', () => {
    const state = addPeer(emptyIpamState(parseHomeNetworks({ podCIDR: '10.0.0.0/24', externalCIDR: '192.168.0.0/24' })), {
      clusterId: 'a',
      podCIDR: '10.0.0.0/24',
      externalCIDR: '10.200.0.0/24',
    }).state;
    const naming = (key: string) => (err: unknown) =>
      err instanceof InputError && err.field === 'cluster' && err.value === 'a' && new RegExp(`${key} unknown`).test(err.message);
    assert.throws(() => mapEndpoint(state, 'a', '10.1.0.5'), naming('localNATExternalCIDR'));
    assert.throws(() => mapEndpoint(state, 'a', '10.0.0.5'), naming('localNATPodCIDR'));
  });

  it('refuses ExternalCIDR addresses and endpoints of the other family as endpoints', () => {
    const state = clusterB();
    assert.throws(
      () => mapEndpoint(state, 'a', '192.168.0.7'),
      (err: unknown) => err instanceof InputError && err.field === 'ip' && /map the real endpoint address/.test(err.message),
    );
    assert.throws(
      () => mapEndpoint(state, 'a', 'fd00::7'),
      (err: unknown) => err instanceof InputError && /needs an IPv4 address/.test(err.message),
    );
    assert.throws(
      () => mapEndpoint(state, 'a', '10.1.0.256'),
      (err: unknown) => err instanceof InputError && err.value === '10.1.0.256',
    );
  });

  it('refuses, naming the field and the value, an endpoint address no pod can have: unspecified, broadcast, multicast, loopback', () => {
    const state = clusterB();
    const special = ['0.0.0.0', '0.1.2.3', '255.255.255.255', '224.0.0.1', '239.255.255.250', '127.0.0.1'];
    for (const ip of special) {
      for (const operation of [mapEndpoint, unmapEndpoint]) {
        assert.throws(
          () => operation(state, 'a', ip),
          (err: unknown) =>
            err instanceof InputError &&
            err.field === 'ip' &&
            err.value === ip &&
            /not unicast space a node or pod can be in/.test(err.message),
          `${operation.name} ${ip}`,
        );
      }
    }
    let v6 = emptyIpamState(parseHomeNetworks({ podCIDR: 'fd10::/64', externalCIDR: 'fd11::/64' }));
    v6 = addPeer(v6, { clusterId: 'a', podCIDR: 'fd20::/64', externalCIDR: 'fd21::/64' }).state;
    v6 = setRemoteView(v6, { clusterId: 'a', localNATPodCIDR: 'fd10::/64', localNATExternalCIDR: 'fd11::/64' }).state;
    for (const ip of ['::', '::1', 'ff02::1']) {
      assert.throws(
        () => mapEndpoint(v6, 'a', ip),
        (err: unknown) => err instanceof InputError && err.field === 'ip' && err.value === ip,
        ip,
      );
    }
    // The edges of those blocks are ordinary addresses.
    assert.equal(mapOk(state, 'a', '1.0.0.0').ip, '192.168.0.1');
    assert.equal(mapOk(state, 'a', '223.255.255.255').ip, '192.168.0.1');
    assert.equal(mapOk(v6, 'a', 'fd30::1').ip, 'fd11::');
  });

  for (const [externalCIDR, usable] of [
    ['192.168.0.0/29', ['192.168.0.1', '192.168.0.2', '192.168.0.3', '192.168.0.4', '192.168.0.5']],
    ['192.168.0.0/30', ['192.168.0.1']],
    ['192.168.0.0/31', ['192.168.0.0']],
    ['192.168.0.7/32', []],
    ['fd99::/126', ['fd99::', 'fd99::1', 'fd99::2']],
  ] as const) {
    it(`uses exactly ${usable.join(', ')} of an ExternalCIDR ${externalCIDR}, then says it is full`, () => {
      const v6 = externalCIDR.includes(':');
      let state = emptyIpamState(parseHomeNetworks({ podCIDR: v6 ? 'fd10::/64' : '10.0.0.0/24', externalCIDR }));
      state = addPeer(state, {
        clusterId: 'a',
        podCIDR: v6 ? 'fd20::/64' : '10.1.0.0/24',
        externalCIDR: v6 ? 'fd30::/64' : '10.2.0.0/24',
      }).state;
      state = setRemoteView(state, {
        clusterId: 'a',
        localNATPodCIDR: v6 ? 'fd10::/64' : '10.0.0.0/24',
        localNATExternalCIDR: externalCIDR,
      }).state;
      const got: string[] = [];
      usable.forEach((_, i) => {
        const out = mapOk(state, 'a', v6 ? `fd40::${i + 1}` : `10.9.0.${i + 1}`);
        got.push(out.ip);
        state = out.state;
      });
      assert.deepEqual(got, usable);
      assert.throws(
        () => mapEndpoint(state, 'a', v6 ? 'fd40::99' : '10.9.0.99'),
        (err: unknown) => err instanceof StateError && /is full/.test(err.message),
      );
    });
  }
});
