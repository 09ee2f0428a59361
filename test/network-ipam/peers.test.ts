import assert from 'node:assert/strict';
import { InputError, StateError } from '../../src/errors';
import { type HomeNetworksSpec, parseHomeNetworks } from '../../src/api/home-networks';
import { formatIp } from '../../src/net/cidr';
import { addPeer, homePodIp, removePeer, setRemoteView } from '../../src/network-ipam/peers';
import { type IpamState, emptyIpamState } from '../../src/network-ipam/state';

function fresh(spec: Partial<HomeNetworksSpec> = {}): IpamState {
  return emptyIpamState(parseHomeNetworks({ podCIDR: '10.0.0.0/16', serviceCIDR: '10.96.0.0/12', externalCIDR: '10.201.0.0/16', ...spec }));
}

function remoteOf(state: IpamState, clusterId: string, podCIDR: string, externalCIDR: string): [string, string] {
  const { result } = addPeer(state, { clusterId, podCIDR, externalCIDR });
  return [result.remotePodCIDR, result.remoteExternalCIDR];
}

describe('IPAM peers: keep or remap', () => {
  it('keeps a peer network that overlaps nothing in use', () => {
    assert.deepEqual(remoteOf(fresh(), 'b', '10.1.0.0/16', '10.202.0.0/16'), ['10.1.0.0/16', '10.202.0.0/16']);
  });

  it('remaps a PodCIDR equal to ours to the lowest free network of the same size (both 10.0.0.0/24)', () => {
    const home = fresh({ podCIDR: '10.0.0.0/24', serviceCIDR: '10.0.1.0/24', externalCIDR: '10.0.2.0/24', pools: ['192.168.0.0/16'] });
    assert.deepEqual(remoteOf(home, 'a', '10.0.0.0/24', '10.0.2.0/24'), ['192.168.0.0/24', '192.168.1.0/24']);
  });

  it('skips every kind of network in use: PodCIDR, ServiceCIDR, ExternalCIDR, reserved, other peers', () => {
    let state = fresh({
      podCIDR: '10.0.0.0/16',
      serviceCIDR: '10.1.0.0/16',
      externalCIDR: '10.2.0.0/16',
      reserved: ['10.3.0.0/16', '10.4.0.0/15'],
    });
    const b = addPeer(state, { clusterId: 'b', podCIDR: '10.0.0.0/16', externalCIDR: '10.2.0.0/16' });
    assert.deepEqual([b.result.remotePodCIDR, b.result.remoteExternalCIDR], ['10.6.0.0/16', '10.7.0.0/16']);
    state = b.state;
    assert.deepEqual(remoteOf(state, 'c', '10.6.0.0/16', '10.5.0.0/16'), ['10.8.0.0/16', '10.9.0.0/16']);
  });

  it('aligns a remap to its own size after a smaller network in use (/20 after a /24), and avoids its own other remap', () => {
    const state = fresh({ podCIDR: '10.0.0.0/24', serviceCIDR: '10.0.1.0/24', externalCIDR: '10.0.2.0/24' });
    assert.deepEqual(remoteOf(state, 'b', '10.0.0.0/20', '10.0.16.0/23'), ['10.0.16.0/20', '10.0.4.0/23']);
  });

  it('takes pools in the configured order and skips pools of the other family or too small', () => {
    const state = fresh({ pools: ['192.168.0.0/24', 'fd00::/8', '172.16.0.0/12', '10.0.0.0/8'] });
    assert.deepEqual(remoteOf(state, 'b', '10.0.0.0/16', '10.201.0.0/24'), ['172.16.0.0/16', '192.168.0.0/24']);
  });

  it('remaps IPv6 peers into IPv6 pools (default fd00::/8), and refuses a network of the other family', () => {
    let state = fresh({ podCIDR: 'fd00::/48', serviceCIDR: 'fd00:1::/108', externalCIDR: 'fd00:2::/112' });
    const b = addPeer(state, { clusterId: 'b', podCIDR: 'fd00::/48', externalCIDR: 'fd00:2::/112' });
    assert.deepEqual([b.result.remotePodCIDR, b.result.remoteExternalCIDR], ['fd00:0:1::/48', 'fd00:0:2::/112']);
    state = b.state;
    assert.deepEqual(remoteOf(state, 'c', 'fd00::/64', 'fd00:3::/112'), ['fd00:0:2:1::/64', 'fd00:3::/112']);
    assert.throws(
      () => addPeer(state, { clusterId: 'd', podCIDR: 'fd00:9::/48', externalCIDR: '10.201.0.0/16' }),
      (err: unknown) =>
        err instanceof InputError &&
        err.field === 'externalCIDR' &&
        err.reason === 'is IPv4; this IPAM places IPv6 networks (each family on its own)',
    );
  });

  it('fails clearly when no pool has a free network of that size, changing nothing', () => {
    const state = fresh({ pools: ['192.168.0.0/16'] });
    assert.throws(
      () => addPeer(state, { clusterId: 'b', podCIDR: '10.0.0.0/12', externalCIDR: '10.16.0.0/16' }),
      (err: unknown) =>
        err instanceof StateError &&
        /podCIDR 10\.0\.0\.0\/12 overlaps a network in use and no free \/12 IPv4 network is left in the pools 192\.168\.0\.0\/16/.test(
          err.message,
        ),
    );
    assert.equal(state.peers.size, 0);
  });

  it('returns the same answer and the same state when the same peer is added again', () => {
    const first = addPeer(fresh(), { clusterId: 'b', podCIDR: '10.0.0.0/16', externalCIDR: '10.201.0.0/16' });
    const again = addPeer(first.state, { clusterId: 'b', podCIDR: '10.0.0.0/16', externalCIDR: '10.201.0.0/16' });
    assert.equal(again.state, first.state);
    assert.deepEqual(again.result, first.result);
  });

  it('remaps only the network that changed, keeping how the peer sees us', () => {
    let state = addPeer(fresh(), { clusterId: 'b', podCIDR: '10.0.0.0/16', externalCIDR: '10.201.0.0/16' }).state;
    state = setRemoteView(state, { clusterId: 'b', localNATPodCIDR: '10.50.0.0/16', localNATExternalCIDR: '10.51.0.0/16' }).state;
    const changed = addPeer(state, { clusterId: 'b', podCIDR: '10.0.0.0/20', externalCIDR: '10.201.0.0/16' });
    assert.equal(changed.result.remotePodCIDR, '10.1.0.0/20', 'the old 10.1.0.0/16 is released first');
    assert.equal(changed.result.remoteExternalCIDR, '10.2.0.0/16');
    assert.equal(changed.result.localNATPodCIDR, '10.50.0.0/16');
    assert.equal(changed.state.peers.size, 1);
  });

  it("releases a removed peer's networks for the next peer", () => {
    let state = addPeer(fresh(), { clusterId: 'b', podCIDR: '10.0.0.0/16', externalCIDR: '10.201.0.0/16' }).state;
    const removed = removePeer(state, 'b');
    assert.deepEqual(removed.result, { removed: true });
    state = removed.state;
    assert.deepEqual(remoteOf(state, 'c', '10.0.0.0/16', '10.201.0.0/16'), ['10.1.0.0/16', '10.2.0.0/16']);
    assert.deepEqual(removePeer(state, 'zz').result, { removed: false });
  });

  it('refuses bad input naming the field and value', () => {
    const state = fresh();
    const refused = (field: string, value: unknown) => (err: unknown) =>
      err instanceof InputError && err.field === field && err.value === value;
    assert.throws(
      () => addPeer(state, { clusterId: 'Bad_Id', podCIDR: '10.1.0.0/16', externalCIDR: '10.2.0.0/16' }),
      refused('cluster', 'Bad_Id'),
    );
    assert.throws(
      () => addPeer(state, { clusterId: 'b', podCIDR: '10.1.0.1/16', externalCIDR: '10.2.0.0/16' }),
      refused('podCIDR', '10.1.0.1/16'),
    );
    assert.throws(
      () => addPeer(state, { clusterId: 'b', podCIDR: '10.1.0.0/16', externalCIDR: '10.1.128.0/17' }),
      refused('externalCIDR', '10.1.128.0/17'),
    );
  });
});

describe('IPAM peers: remote view and home pod IPs', () => {
  const base = addPeer(
    fresh({ podCIDR: '10.0.0.0/24', serviceCIDR: '10.0.1.0/24', externalCIDR: '10.0.2.0/24', pools: ['192.168.0.0/16'] }),
    {
      clusterId: 'a',
      podCIDR: '10.0.0.0/24',
      externalCIDR: '10.1.0.0/24',
    },
  ).state;

  it('translates a pod IP of the peer into our view of it (10.0.0.34 -> 192.168.0.34, docs/packet-contract.md)', () => {
    assert.equal(homePodIp(base, 'a', '10.0.0.34'), '192.168.0.34');
    assert.throws(
      () => homePodIp(base, 'a', '10.1.0.5'),
      (err: unknown) => err instanceof InputError && /not in the PodCIDR 10\.0\.0\.0\/24 of peer a/.test(err.message),
    );
    assert.throws(
      () => homePodIp(base, 'nope', '10.0.0.1'),
      (err: unknown) => err instanceof InputError && err.field === 'cluster',
    );
  });

  it('records how the peer sees us, refusing a view of another size (no /16 assumption)', () => {
    const view = setRemoteView(base, { clusterId: 'a', localNATPodCIDR: '172.16.5.0/24', localNATExternalCIDR: '10.0.2.0/24' });
    assert.equal(view.result.localNATPodCIDR, '172.16.5.0/24');
    assert.equal(view.result.localNATExternalCIDR, '10.0.2.0/24');
    assert.throws(
      () => setRemoteView(base, { clusterId: 'a', localNATPodCIDR: '172.16.0.0/16', localNATExternalCIDR: '10.0.2.0/24' }),
      (err: unknown) =>
        err instanceof InputError &&
        err.field === 'localNATPodCIDR' &&
        /IPv4 \/24 network, the size of our podCIDR 10\.0\.0\.0\/24/.test(err.message),
    );
    assert.throws(
      () => setRemoteView(base, { clusterId: 'a', localNATPodCIDR: '172.16.5.0/24', localNATExternalCIDR: '172.16.5.0/24' }),
      (err: unknown) => err instanceof InputError && err.field === 'localNATExternalCIDR',
    );
  });
});

describe('IPAM peers: every prefix length', () => {
  for (const family of [4, 6] as const) {
    const bits = family === 4 ? 32 : 128;
    it(`remaps a colliding /2 to /${bits} IPv${family} PodCIDR to the next network and keeps host bits`, () => {
      // Home networks and the peers' ExternalCIDRs sit in the last quarter of the space, so only the two
      // PodCIDRs meet (a /1 would meet them: the test starts at /2).
      const top =
        family === 4
          ? { podCIDR: '255.255.255.0/25', externalCIDR: '255.255.255.128/25', ext: ['255.255.254.0/25', '255.255.254.128/25'] }
          : { podCIDR: 'ffff::/64', externalCIDR: 'ffff:1::/64', ext: ['ffff:2::/64', 'ffff:3::/64'] };
      const zero = family === 4 ? '0.0.0.0' : '::';
      const pools = family === 4 ? ['0.0.0.0/1', '128.0.0.0/1'] : ['::/1', '8000::/1'];
      for (let prefix = 2; prefix <= bits; prefix++) {
        const size = 1n << BigInt(bits - prefix);
        let state = emptyIpamState(parseHomeNetworks({ podCIDR: top.podCIDR, externalCIDR: top.externalCIDR, pools }));
        state = addPeer(state, { clusterId: 'x', podCIDR: `${zero}/${prefix}`, externalCIDR: top.ext[0] }).state;
        const y = addPeer(state, { clusterId: 'y', podCIDR: `${zero}/${prefix}`, externalCIDR: top.ext[1] });
        const ip = (value: bigint) => formatIp({ family, value });
        assert.equal(y.result.remotePodCIDR, `${ip(size)}/${prefix}`, `/${prefix}`);
        assert.equal(homePodIp(y.state, 'y', ip(0n)), ip(size));
        assert.equal(homePodIp(y.state, 'y', ip(size - 1n)), ip(2n * size - 1n));
        assert.equal(homePodIp(y.state, 'y', ip(size / 3n)), ip(size + size / 3n));
      }
    });
  }
});
