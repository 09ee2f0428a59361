/**
 * Model-based test: random sequences of peer and endpoint operations run against the IPAM and against a
 * brute-force reference model; every answer must match exactly and the invariants must hold after each
 * step. Small pools and a /29 ExternalCIDR make exhaustion, reuse and refusals common.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InputError, StateError } from '../../src/errors';
import { type Cidr, cidrLast, cidrsOverlap, containsIp, formatCidr, formatIp, parseCidr, parseIp, translateIp } from '../../src/net/cidr';
import { mapEndpoint, unmapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { addPeer, homePodIp, removePeer, setRemoteView } from '../../src/network-ipam/peers';
import type { IpamState } from '../../src/network-ipam/state';
import { fromDocument, toDocument } from '../../src/network-ipam/state-document';
import { assertDocumentInvariants } from './invariants';

const home = {
  podCIDR: '10.0.0.0/24',
  serviceCIDR: '10.0.1.0/24',
  externalCIDR: '10.0.2.0/29',
  reserved: ['10.0.3.0/24'],
  pools: ['10.0.4.0/22', '172.16.0.0/23'],
};
const H = { pod: parseCidr('h', home.podCIDR), ext: parseCidr('h', home.externalCIDR) };
const homeUsed = [home.podCIDR, home.serviceCIDR, home.externalCIDR, ...home.reserved].map((c) => parseCidr('h', c));
const pools = home.pools.map((c) => parseCidr('p', c));

const clusterIds = ['a', 'b', 'c'];
const peerCidrs = [
  '10.0.0.0/24',
  '10.0.0.0/25',
  '10.0.4.0/24',
  '10.0.6.0/23',
  '172.16.0.0/24',
  '10.9.0.0/24',
  '10.0.2.0/28',
  '10.0.5.128/25',
  '10.0.0.0/22',
];
const podViews = ['10.0.0.0/24', '10.50.0.0/24', '10.50.0.0/16'];
const externalViews = ['10.0.2.0/29', '10.60.0.8/29', '10.50.0.0/29', '10.0.2.0/30'];
const endpoints = [
  '10.0.0.5',
  '10.0.0.200',
  '10.9.0.1',
  '10.9.0.2',
  '10.9.0.3',
  '10.9.0.4',
  '10.9.0.5',
  '10.9.0.6',
  '10.9.0.7',
  '10.0.2.3',
  'fd00::1',
];

type Op =
  | { kind: 'add'; id: string; pod: string; ext: string }
  | { kind: 'view'; id: string; pod: string; ext: string }
  | { kind: 'remove'; id: string }
  | { kind: 'map' | 'unmap' | 'homePod'; id: string; ip: string };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      id: fc.constantFrom(...clusterIds),
      pod: fc.constantFrom(...peerCidrs),
      ext: fc.constantFrom(...peerCidrs),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('view' as const),
      id: fc.constantFrom(...clusterIds),
      pod: fc.constantFrom(...podViews),
      ext: fc.constantFrom(...externalViews),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), id: fc.constantFrom(...clusterIds) }) },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('map' as const), id: fc.constantFrom(...clusterIds), ip: fc.constantFrom(...endpoints) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('unmap' as const), id: fc.constantFrom(...clusterIds), ip: fc.constantFrom(...endpoints) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('homePod' as const),
      id: fc.constantFrom(...clusterIds),
      ip: fc.constantFrom('10.0.0.7', '10.0.4.9', '10.9.0.1', '172.16.0.3'),
    }),
  },
);

interface ModelPeer {
  pod: Cidr;
  ext: Cidr;
  remotePod: Cidr;
  remoteExt: Cidr;
  view?: { pod: Cidr; ext: Cidr };
  mapped: Set<string>;
}

/** The reference: plain Maps and brute-force scans, written from the rules, not from the code. */
class Model {
  peers = new Map<string, ModelPeer>();
  external = new Map<string, bigint>();

  private used(except: string): Cidr[] {
    return [...homeUsed, ...[...this.peers].filter(([id]) => id !== except).flatMap(([, p]) => [p.remotePod, p.remoteExt])];
  }

  private place(own: Cidr, used: Cidr[]): Cidr | undefined {
    if (!used.some((u) => cidrsOverlap(u, own))) return own;
    for (const pool of pools) {
      if (pool.family !== own.family || pool.prefix > own.prefix) continue;
      const size = 1n << BigInt(32 - own.prefix);
      for (let base = pool.base; base + size - 1n <= cidrLast(pool); base += size) {
        const c: Cidr = { family: own.family, base, prefix: own.prefix };
        if (!used.some((u) => cidrsOverlap(u, c))) return c;
      }
    }
    return undefined;
  }

  /** Returns the expected answer, or 'error' when the operation must be refused. */
  apply(op: Op): string | 'error' {
    const peer = this.peers.get(op.id);
    switch (op.kind) {
      case 'add': {
        const pod = parseCidr('p', op.pod);
        const ext = parseCidr('e', op.ext);
        if (cidrsOverlap(pod, ext)) return 'error';
        const keptPod = peer && formatCidr(peer.pod) === op.pod ? peer.remotePod : undefined;
        const keptExt = peer && formatCidr(peer.ext) === op.ext ? peer.remoteExt : undefined;
        const used = [...this.used(op.id), ...(keptPod ? [keptPod] : []), ...(keptExt ? [keptExt] : [])];
        const remotePod = keptPod ?? this.place(pod, used);
        if (!remotePod) return 'error';
        const remoteExt = keptExt ?? this.place(ext, keptPod ? used : [...used, remotePod]);
        if (!remoteExt) return 'error';
        this.peers.set(op.id, { mapped: new Set(), ...peer, pod, ext, remotePod, remoteExt });
        return `${formatCidr(remotePod)} ${formatCidr(remoteExt)}`;
      }
      case 'view': {
        const pod = parseCidr('p', op.pod);
        const ext = parseCidr('e', op.ext);
        if (!peer || pod.prefix !== H.pod.prefix || ext.prefix !== H.ext.prefix || cidrsOverlap(pod, ext)) return 'error';
        peer.view = { pod, ext };
        return 'ok';
      }
      case 'remove':
        if (!peer) return 'false';
        for (const ip of peer.mapped) this.release(op.id, ip);
        this.peers.delete(op.id);
        return 'true';
      case 'homePod': {
        const ip = parseIp('ip', op.ip);
        if (!peer || !containsIp(peer.pod, ip)) return 'error';
        return formatIp(translateIp(ip, peer.pod, peer.remotePod));
      }
      case 'map': {
        const ip = parseIp('ip', op.ip);
        if (!peer) return 'error';
        if (containsIp(H.pod, ip)) return peer.view ? formatIp(translateIp(ip, H.pod, peer.view.pod)) : 'error';
        if (ip.family !== 4 || containsIp(H.ext, ip) || !peer.view) return 'error';
        let address = this.external.get(op.ip);
        if (address === undefined) {
          const taken = new Set(this.external.values());
          // Network, broadcast and the transit address (the one before broadcast) are never given.
          for (let a = H.ext.base + 1n; a < cidrLast(H.ext) - 1n; a++) {
            if (!taken.has(a)) {
              address = a;
              break;
            }
          }
          if (address === undefined) return 'error';
          this.external.set(op.ip, address);
        }
        peer.mapped.add(op.ip);
        return formatIp(translateIp({ family: 4, value: address }, H.ext, peer.view.ext));
      }
      case 'unmap': {
        if (!peer) return 'error';
        if (!peer.mapped.has(op.ip)) return 'false';
        peer.mapped.delete(op.ip);
        return String(this.release(op.id, op.ip));
      }
    }
  }

  /** Drops one reflection; returns whether the address was freed. */
  private release(id: string, ip: string): boolean {
    const stillMapped = [...this.peers].some(([other, p]) => other !== id && p.mapped.has(ip));
    if (!stillMapped) this.external.delete(ip);
    return !stillMapped;
  }
}

/** The IPAM's answer in the model's terms; refusals must be InputError or StateError. */
function run(state: IpamState, op: Op): { state: IpamState; answer: string } {
  try {
    switch (op.kind) {
      case 'add': {
        const out = addPeer(state, { clusterId: op.id, podCIDR: op.pod, externalCIDR: op.ext });
        return { state: out.state, answer: `${out.result.remotePodCIDR} ${out.result.remoteExternalCIDR}` };
      }
      case 'view':
        return {
          state: setRemoteView(state, { clusterId: op.id, localNATPodCIDR: op.pod, localNATExternalCIDR: op.ext }).state,
          answer: 'ok',
        };
      case 'remove': {
        const out = removePeer(state, op.id);
        return { state: out.state, answer: String(out.result.removed) };
      }
      case 'homePod':
        return { state, answer: homePodIp(state, op.id, op.ip) };
      case 'map': {
        const out = mapEndpoint(state, op.id, op.ip);
        return { state: out.state, answer: out.result.ip };
      }
      case 'unmap': {
        const out = unmapEndpoint(state, op.id, op.ip);
        return { state: out.state, answer: out.result.removed ? String(out.result.freedExternalIP !== null) : 'false' };
      }
    }
  } catch (err) {
    if (err instanceof InputError || err instanceof StateError) return { state, answer: 'error' };
    throw err;
  }
}

describe('IPAM model-based property test', () => {
  it('matches the reference model on random operation sequences, keeps invariants, and gives everything back', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 120, size: 'max' }), (ops) => {
        const initial = initializeIpam(undefined, home).state;
        let state = initial;
        const model = new Model();
        for (const op of ops) {
          const before = state;
          const got = run(state, op);
          const expected = model.apply(op);
          assert.equal(got.answer, expected, `${JSON.stringify(op)}`);
          if (expected === 'error') assert.equal(got.state, before, 'a refused operation changes nothing');
          state = got.state;
          const doc = toDocument({ primary: state });
          assertDocumentInvariants(doc);
          const reloaded = fromDocument(JSON.parse(JSON.stringify(doc))).primary;
          assert.deepEqual(toDocument({ primary: reloaded }), doc);
          assert.deepEqual(
            new Map(state.external.byEndpoint.entries()),
            new Map(reloaded.external.byEndpoint.entries()),
            'allocation table = union of NatMappings',
          );
          assert.equal(
            state.external.used.size,
            state.external.byEndpoint.size + 3,
            'used addresses = mapped endpoints + network + broadcast + transit',
          );
        }
        for (const id of clusterIds) state = removePeer(state, id).state;
        assert.deepEqual(toDocument({ primary: state }), toDocument({ primary: initial }));
        assert.equal(state.external.byEndpoint.size, 0);
        assert.equal(state.external.used.lowestFree(), 1n);
      }),
      { numRuns: 300 },
    );
  });
});
