import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseNodeSpec, readSpecText, validateNodeSpec } from '../../src/agent/spec-file';
import { InputError } from '../../src/errors';
import { nodeSpec, peerB, peerC } from './fixture';

type Mutable = Record<string, any>;

/** The fixture spec with one change made by `edit`. */
function edited(edit: (s: Mutable) => void): unknown {
  const s = JSON.parse(JSON.stringify(nodeSpec([peerB, peerC]))) as Mutable;
  edit(s);
  return s;
}

function rejects(value: unknown, field: string, got: unknown): void {
  assert.throws(() => validateNodeSpec(value), (err: unknown) => {
    assert.ok(err instanceof InputError, `an InputError, got ${String(err)}`);
    assert.equal(err.field, field);
    assert.deepEqual(err.value, got);
    return true;
  });
}

describe('agent spec file', () => {
  it('accepts a valid spec unchanged', () => {
    const spec = nodeSpec([peerB, peerC]);
    assert.deepEqual(validateNodeSpec(JSON.parse(JSON.stringify(spec))), spec);
    assert.deepEqual(parseNodeSpec(JSON.stringify(spec), 'f.json'), spec);
  });

  it('accepts an IPsec peering and a public address', () => {
    const s = edited((x) => { x.peers[0].transport = 'ipsec'; x.node.publicAddress = '203.0.113.2'; }) as Mutable;
    const spec = validateNodeSpec(s);
    assert.equal(spec.peers[0]!.transport, 'ipsec');
    assert.equal(spec.node.publicAddress, '203.0.113.2');
  });

  const cases: [string, (s: Mutable) => void, string, unknown][] = [
    ['a bad public address', (s) => { s.node.publicAddress = 'gw.example'; }, 'node.publicAddress', 'gw.example'],
    ['not an object', (s) => { s.node = 'n1'; }, 'node', 'n1'],
    ['a missing field', (s) => { delete s.overlay; }, 'overlay', undefined],
    ['an unknown field (a typo)', (s) => { s.peer = []; }, 'peer', []],
    ['an unknown nested field', (s) => { s.peers[1].endpoint.addr = '1.2.3.4'; }, 'peers[1].endpoint.addr', '1.2.3.4'],
    ['a CIDR with host bits', (s) => { s.podCIDR = '10.0.0.1/16'; }, 'podCIDR', '10.0.0.1/16'],
    ['a CIDR that is a number', (s) => { s.externalCIDR = 24; }, 'externalCIDR', 24],
    ['a bad address', (s) => { s.node.underlayAddress = '192.0.2.011'; }, 'node.underlayAddress', '192.0.2.011'],
    ['an unknown role', (s) => { s.node.role = 'hub'; }, 'node.role', 'hub'],
    ['a transit address outside the ExternalCIDR', (s) => { s.transitAddress = '10.51.0.1'; }, 'transitAddress', '10.51.0.1'],
    ['a VNI too large', (s) => { s.overlay.vni = 1 << 24; }, 'overlay.vni', 1 << 24],
    ['a port as text', (s) => { s.overlay.port = '4789'; }, 'overlay.port', '4789'],
    ['a bad MAC', (s) => { s.overlay.mac = '02:53:54:00:00'; }, 'overlay.mac', '02:53:54:00:00'],
    ['a multicast MAC', (s) => { s.overlay.mac = '01:00:5e:00:00:01'; }, 'overlay.mac', '01:00:5e:00:00:01'],
    ['peers not an array', (s) => { s.peers = {}; }, 'peers', {}],
    ['peer id 0', (s) => { s.peers[0].peerId = 0; }, 'peers[0].peerId', 0],
    ['a fractional peer id', (s) => { s.peers[1].peerId = 1.5; }, 'peers[1].peerId', 1.5],
    ['a bad remote prefix', (s) => { s.peers[1].remotePodCIDR = '10.2.0.0/33'; }, 'peers[1].remotePodCIDR', '10.2.0.0/33'],
    ['a local NAT prefix of another length', (s) => { s.peers[1].localNATPodCIDR = '172.18.0.0/20'; }, 'peers[1].localNATPodCIDR', '172.18.0.0/20'],
    ['a local NAT external prefix of another length', (s) => { s.peers[0].localNATExternalCIDR = '172.17.0.0/26'; }, 'peers[0].localNATExternalCIDR', '172.17.0.0/26'],
    ['an endpoint port 0', (s) => { s.peers[0].endpoint.port = 0; }, 'peers[0].endpoint.port', 0],
    ['an unknown transport', (s) => { s.peers[0].transport = 'wireguard'; }, 'peers[0].transport', 'wireguard'],
    ['a duplicate peer id', (s) => { s.peers[1].peerId = 5; }, 'peers[1].peerId', 5],
    ['a duplicate peer', (s) => { s.peers[1].clusterId = 'b'; }, 'peers[1].clusterId', 'b'],
    ['a NatMapping outside the ExternalCIDR', (s) => { s.natMappings[0].externalAddress = '10.0.0.9'; }, 'natMappings[0].externalAddress', '10.0.0.9'],
    ['a NatMapping to a bad endpoint', (s) => { s.natMappings[0].endpointAddress = 'pod-a'; }, 'natMappings[0].endpointAddress', 'pod-a'],
    ['a node with a bad pod prefix', (s) => { s.nodes[0].podCIDRs = ['10.0.0.0/24', '10.0.1.0/23']; }, 'nodes[0].podCIDRs[1]', '10.0.1.0/23'],
    ['an empty node name', (s) => { s.nodes[0].name = ' '; }, 'nodes[0].name', ' '],
  ];
  for (const [what, edit, field, got] of cases) {
    it(`refuses ${what}, naming ${field} and its value`, () => rejects(edited(edit), field, got));
  }

  it('refuses a top level that is not an object', () => rejects([], 'spec', []));

  it('refuses a half-written file, naming the file', () => {
    const text = JSON.stringify(nodeSpec()).slice(0, 100);
    assert.throws(() => parseNodeSpec(text, '/run/a/n1.json'), (err: unknown) => err instanceof InputError && err.field === '/run/a/n1.json' && /not valid JSON/.test(err.message));
  });

  it('reads the file text, and undefined while it does not exist', () => {
    const dir = mkdtempSync(join(tmpdir(), 'strait-spec-'));
    try {
      assert.equal(readSpecText(join(dir, 'n1.json')), undefined);
      writeFileSync(join(dir, 'n1.json'), '{}');
      assert.equal(readSpecText(join(dir, 'n1.json')), '{}');
      assert.throws(() => readSpecText(dir), /EISDIR/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
