import assert from 'node:assert/strict';
import { readControllerConfig } from '../../src/api/controller-config';
import { runDirPaths } from '../../src/api/run-dir';
import { type WholeNodeDataplaneSpecDocument, readNodeDataplane } from '../../src/api/node-dataplane';
import { emptyExchange } from '../../src/controller/exchange-view';
import type { GatewayTenure } from '../../src/controller/election';
import { reconcile } from '../../src/controller/reconcile';
import { containsIp, parseCidr, parseIp, sameShape } from '../../src/net/cidr';
import { requireOneUnderlayFamily } from '../../src/nodespec/ip-family';
import { Lab } from './memory-lab';

/** What each side of a peering tells the dataplane must agree: my view of me in you is your view of me. */
function assertConsistent(lab: Lab, x: string, y: string): void {
  const tx = lab.tunnel(x, y);
  const ty = lab.tunnel(y, x);
  assert.equal(tx.localNATPodCIDR, ty.remotePodCIDR, `${x}'s localNATPodCIDR for ${y} vs ${y}'s remotePodCIDR for ${x}`);
  assert.equal(
    tx.localNATExternalCIDR,
    ty.remoteExternalCIDR,
    `${x}'s localNATExternalCIDR for ${y} vs ${y}'s remoteExternalCIDR for ${x}`,
  );
  assert.equal(ty.localNATPodCIDR, tx.remotePodCIDR, `${y}'s localNATPodCIDR for ${x} vs ${x}'s remotePodCIDR for ${y}`);
  assert.equal(
    ty.localNATExternalCIDR,
    tx.remoteExternalCIDR,
    `${y}'s localNATExternalCIDR for ${x} vs ${x}'s remoteExternalCIDR for ${y}`,
  );
  for (const [self, tunnel] of [
    [x, tx],
    [y, ty],
  ] as const) {
    const home = lab.controllers.get(self)!.config.home;
    assert.ok(
      sameShape(parseCidr('pod', tunnel.localNATPodCIDR), parseCidr('pod', home.podCIDR)),
      `${self}'s PodCIDR keeps its size in the peer`,
    );
    assert.ok(
      sameShape(parseCidr('ext', tunnel.localNATExternalCIDR), parseCidr('ext', home.externalCIDR)),
      `${self}'s ExternalCIDR keeps its size in the peer`,
    );
  }
}

function peersOf(spec: WholeNodeDataplaneSpecDocument): string[] {
  return spec.peers.map((p) => p.clusterId);
}

function endpointOf(spec: WholeNodeDataplaneSpecDocument, peer: string): { address: string; port: number } {
  const entry = spec.peers.find((p) => p.clusterId === peer);
  assert.ok(entry, `${spec.clusterId}/${spec.node.name} has no peer ${peer}`);
  return entry.endpoint;
}

function converged(): Lab {
  const lab = new Lab();
  lab.heartbeatAll();
  lab.converge();
  return lab;
}

describe('controller reconcile (three clusters, in memory)', () => {
  it('converges: every peering ready, the four prefixes consistent on both sides', () => {
    const lab = new Lab();
    lab.heartbeatAll();
    const rounds = lab.converge();
    assert.ok(rounds <= 5, `took ${rounds} rounds`);
    assert.deepEqual(lab.result('cluster-a').status.peers, [{ clusterId: 'cluster-b', state: 'ready' }]);
    assert.deepEqual(lab.result('cluster-b').status.peers, [
      { clusterId: 'cluster-a', state: 'ready' },
      { clusterId: 'cluster-c', state: 'ready' },
    ]);
    assert.deepEqual(lab.result('cluster-c').status.peers, [{ clusterId: 'cluster-b', state: 'ready' }]);
    assertConsistent(lab, 'cluster-a', 'cluster-b');
    assertConsistent(lab, 'cluster-b', 'cluster-c');
    // A and B collide on both networks: each remaps the other's into 10/8; C's /20 then collides with
    // B's remap of A's ExternalCIDR and moves, its /25 ExternalCIDR is free and kept.
    assert.deepEqual(lab.tunnel('cluster-a', 'cluster-b'), {
      clusterId: 'cluster-b',
      remotePodCIDR: '10.1.0.0/16',
      remoteExternalCIDR: '10.2.0.0/24',
      localNATPodCIDR: '10.1.0.0/16',
      localNATExternalCIDR: '10.2.0.0/24',
      // b-w1 is a candidate too, with a public address: B's standby.
      endpoint: { address: '203.0.113.2', port: 4789, standbyAddresses: ['203.0.113.3'] },
    });
    assert.deepEqual(lab.tunnel('cluster-b', 'cluster-c'), {
      clusterId: 'cluster-c',
      remotePodCIDR: '10.2.16.0/20',
      remoteExternalCIDR: '10.201.0.0/25',
      localNATPodCIDR: '10.0.0.0/16',
      localNATExternalCIDR: '10.200.0.0/24',
      endpoint: { address: '192.168.3.1', port: 4789, standbyAddresses: ['192.168.3.2'] },
    });
  });

  it('peers dual-stack clusters in both families and a single-stack one in IPv4, each family remapped on its own, in every node spec', () => {
    const lab = new Lab();
    // A and B dual-stack with overlapping IPv6 PodCIDRs of different lengths; C stays IPv4-only.
    lab.reconfigure('cluster-a', (d) => {
      d.secondary = { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' };
      (d.nodes as { podCIDRs: string[] }[])[0]!.podCIDRs.push('fd00:a:0:1::/64');
    });
    lab.reconfigure('cluster-b', (d) => {
      d.secondary = { podCIDR: 'fd00:a::/56', externalCIDR: 'fd00:ff::/120' };
      d.reflections = [...(d.reflections as unknown[]), { to: 'cluster-c', fromPeer: 'cluster-a', podIP: 'fd00:a:0:1::9' }];
    });
    lab.heartbeatAll();
    lab.converge();
    assertConsistent(lab, 'cluster-a', 'cluster-b');
    const ab = lab.tunnel('cluster-a', 'cluster-b');
    const ba = lab.tunnel('cluster-b', 'cluster-a');
    assert.deepEqual(ab.secondary, {
      remotePodCIDR: 'fd00::/56',
      remoteExternalCIDR: 'fd00:0:0:100::/120',
      localNATPodCIDR: 'fd00::/48',
      localNATExternalCIDR: 'fd00:0:1::/120',
    });
    assert.deepEqual(ba.secondary, {
      remotePodCIDR: ab.secondary!.localNATPodCIDR,
      remoteExternalCIDR: ab.secondary!.localNATExternalCIDR,
      localNATPodCIDR: ab.secondary!.remotePodCIDR,
      localNATExternalCIDR: ab.secondary!.remoteExternalCIDR,
    });
    assert.equal(lab.tunnel('cluster-b', 'cluster-c').secondary, undefined, 'C is IPv4-only');
    // Every node spec carries the families its peerings have, and its own reader takes it.
    const bgw = lab.nodeSpec('cluster-b', 'b-gw');
    assert.deepEqual(bgw.secondary, { podCIDR: 'fd00:a::/56', externalCIDR: 'fd00:ff::/120', transitAddress: 'fd00:ff::ff' });
    assert.deepEqual(
      bgw.peers.map((p) => [p.clusterId, p.secondary?.remotePodCIDR]),
      [
        ['cluster-a', 'fd00::/48'],
        ['cluster-c', undefined],
      ],
    );
    assert.deepEqual(lab.nodeSpec('cluster-a', 'a-gw').nodes.find((n) => n.name === 'a-gw')!.podCIDRs, ['10.0.0.0/24', 'fd00:a:0:1::/64']);
    // An IPv6 reflection to a single-stack peer has no plane there: said as a problem, nothing mapped.
    assert.ok(
      lab.result('cluster-b').problems.some((p) => p.startsWith('reflection of fd00:a:0:1::9 from cluster-a to cluster-c: ')),
      lab.result('cluster-b').problems.join('; '),
    );
    assert.equal(lab.nodeSpec('cluster-b', 'b-gw').natMappings.filter((m) => m.externalAddress.includes(':')).length, 0);
  });

  it('peers an IPv6-only cluster in IPv6 with a dual-stack one, in every node spec', () => {
    const lab = new Lab();
    // B dual-stack (IPv4 first), C IPv6-only with a PodCIDR overlapping B's; A stays IPv4-only and is not C's peer.
    lab.reconfigure('cluster-b', (d) => {
      d.secondary = { podCIDR: 'fd00:c::/56', externalCIDR: 'fd00:ff::/120' };
      d.reflections = [];
    });
    lab.reconfigure('cluster-c', (d) => {
      d.podCIDR = 'fd00:c::/48';
      d.externalCIDR = 'fd00:fe::/120';
      delete d.serviceCIDR;
      for (const [i, n] of (d.nodes as { podCIDRs: string[] }[]).entries()) n.podCIDRs = [`fd00:c:0:${i + 1}::/64`];
    });
    lab.heartbeatAll();
    lab.converge();
    const bc = lab.tunnel('cluster-b', 'cluster-c');
    const cb = lab.tunnel('cluster-c', 'cluster-b');
    // The peering's first family is IPv6 on both sides: each tunnel's own networks, each side's view of the other.
    assert.deepEqual(
      [bc.remotePodCIDR, bc.localNATPodCIDR, bc.secondary],
      ['fd00::/48', 'fd00::/56', undefined],
      "C's /48 and B's /56 overlap: each remapped in the other to the lowest free prefix of its length",
    );
    assert.deepEqual([cb.remotePodCIDR, cb.localNATPodCIDR], [bc.localNATPodCIDR, bc.remotePodCIDR]);
    assert.deepEqual([cb.remoteExternalCIDR, cb.localNATExternalCIDR], [bc.localNATExternalCIDR, bc.remoteExternalCIDR]);
    // Every node spec is one its reader takes (lab.nodeSpec reads it): C's networks and peers all IPv6.
    const cgw = lab.nodeSpec('cluster-c', 'c-gw');
    assert.deepEqual([cgw.podCIDR, cgw.secondary, cgw.peers.map((p) => p.remotePodCIDR)], ['fd00:c::/48', undefined, ['fd00::/56']]);
    assert.deepEqual(
      lab.nodeSpec('cluster-b', 'b-gw').peers.map((p) => [p.clusterId, p.remotePodCIDR, p.secondary]),
      [
        ['cluster-a', '10.1.0.0/16', undefined],
        ['cluster-c', 'fd00::/48', undefined],
      ],
    );
    assert.equal(lab.controllers.get('cluster-b')!.ipam!.primary.peers.get('cluster-c'), undefined, 'nothing of C in the IPv4 plane');
  });

  it("reflects a pod of C into A through B: an address in A's view of B's ExternalCIDR", () => {
    const lab = converged();
    const reflections = lab.disk.json(runDirPaths.reflections('cluster-b')) as {
      to: string;
      fromPeer: string;
      podIP: string;
      endpoint: string;
      address: string;
    }[];
    assert.equal(reflections.length, 1);
    const [r] = reflections;
    assert.equal(r!.endpoint, '10.2.17.10', "C's 10.2.1.10 as B sees it (C's PodCIDR remapped to 10.2.16.0/20)");
    const bInA = lab.tunnel('cluster-a', 'cluster-b').remoteExternalCIDR;
    assert.ok(
      containsIp(parseCidr('bInA', bInA), parseIp('address', r!.address)),
      `${r!.address} is in A's view of B's ExternalCIDR ${bInA}`,
    );
    assert.equal(r!.address, '10.2.0.1');
    // B's dataplane holds the NatMapping: B's ExternalCIDR address → C's pod in B's view.
    for (const node of ['b-gw', 'b-w1']) {
      assert.deepEqual(lab.nodeSpec('cluster-b', node).natMappings, [{ externalAddress: '10.200.0.1', endpointAddress: '10.2.17.10' }]);
    }
    assert.deepEqual(lab.nodeSpec('cluster-a', 'a-gw').natMappings, []);
  });

  it('plans every node with the elected gateway: public address first, else the name order', () => {
    const lab = converged();
    const expected: Record<string, [string, string][]> = {
      'cluster-a': [
        ['a-gw', 'gateway'],
        ['a-w1', 'worker'],
      ],
      'cluster-b': [
        ['b-gw', 'gateway'],
        ['b-w1', 'worker'],
      ],
      'cluster-c': [
        ['c-gw', 'gateway'],
        ['c-w1', 'worker'],
      ],
    };
    for (const [cluster, nodes] of Object.entries(expected)) {
      const gateway = nodes.find(([, role]) => role === 'gateway')![0];
      assert.equal(lab.result(cluster).status.gateway, gateway);
      for (const [node, role] of nodes) {
        const spec = lab.nodeSpec(cluster, node);
        assert.equal(spec.node.role, role, `${cluster}/${node}`);
        assert.equal(spec.activeGateway.name, gateway);
      }
    }
    assert.deepEqual(peersOf(lab.nodeSpec('cluster-a', 'a-w1')), ['cluster-b']);
    assert.deepEqual(peersOf(lab.nodeSpec('cluster-b', 'b-w1')), ['cluster-a', 'cluster-c']);
    assert.deepEqual(peersOf(lab.nodeSpec('cluster-c', 'c-w1')), ['cluster-b']);
    assert.deepEqual(lab.nodeSpec('cluster-b', 'b-gw').peers.find((p) => p.clusterId === 'cluster-c')!.localNATPodCIDR, '10.0.0.0/16');
  });

  it('elects only gateway candidates: a Ready node with a public address that is not one never leads', () => {
    const config = readControllerConfig({
      clusterId: 'cluster-a',
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.200.0.0/24',
      nodes: [
        { name: 'a-edge', underlayAddress: '192.168.1.1', publicAddress: '203.0.113.1', gatewayCandidate: false },
        { name: 'a-gw', underlayAddress: '192.168.1.2' },
      ],
    });
    const now = Date.parse('2026-01-01T00:00:00Z');
    const beat = (ready: boolean) => ({ ready, time: new Date(now).toISOString() });
    const step = (heartbeats: [string, boolean][], previous?: GatewayTenure) =>
      reconcile({
        config,
        ipam: undefined,
        exchange: emptyExchange(),
        heartbeats: new Map(heartbeats.map(([n, r]) => [n, beat(r)])),
        previous,
        now,
      }).election;
    assert.deepEqual(
      step([
        ['a-edge', true],
        ['a-gw', true],
      ]),
      { gateway: 'a-gw', reason: 'elected', since: now },
    );
    // Adopted from a former run: kept, with no tenure start known.
    assert.deepEqual(
      step(
        [
          ['a-edge', true],
          ['a-gw', false],
        ],
        { gateway: 'a-gw' },
      ),
      { gateway: 'a-gw', reason: 'no-ready-node' },
    );
  });

  it('writes nothing more once converged', () => {
    const lab = converged();
    const before = new Map(lab.disk.files);
    for (const id of lab.controllers.keys()) assert.equal(lab.step(id), false, `${id} changed something`);
    assert.deepEqual(lab.disk.files, before);
  });

  it('fails the gateway over when its heartbeat stops, and the peers pick up the new endpoint', () => {
    const lab = converged();
    const bSpecForA = lab.disk.read(runDirPaths.spec('cluster-b', 'cluster-a'));
    lab.now += 2000; // past the 1.5 s timeout: only the nodes that beat again are Ready
    lab.heartbeatAll();
    lab.heartbeat('cluster-b', 'b-gw', false);
    lab.converge();
    assert.equal(lab.result('cluster-b').status.gateway, 'b-w1');
    assert.deepEqual(lab.result('cluster-b').status.readyNodes, ['b-w1']);
    assert.equal(lab.nodeSpec('cluster-b', 'b-w1').node.role, 'gateway');
    assert.equal(lab.nodeSpec('cluster-b', 'b-gw').node.role, 'worker');
    assert.notEqual(lab.disk.read(runDirPaths.spec('cluster-b', 'cluster-a')), bSpecForA);
    for (const node of ['a-gw', 'a-w1'])
      assert.deepEqual(endpointOf(lab.nodeSpec('cluster-a', node), 'cluster-b'), {
        address: '203.0.113.3',
        port: 4789,
        standbyAddresses: ['203.0.113.2'],
      });
    for (const node of ['c-gw', 'c-w1'])
      assert.deepEqual(endpointOf(lab.nodeSpec('cluster-c', node), 'cluster-b'), {
        address: '203.0.113.3',
        port: 4789,
        standbyAddresses: ['203.0.113.2'],
      });
    assertConsistent(lab, 'cluster-a', 'cluster-b');

    // The old gateway coming back does not take the role back: tunnels stay where they are.
    lab.now += 500;
    lab.heartbeatAll();
    lab.converge();
    assert.equal(lab.result('cluster-b').status.gateway, 'b-w1');

    // With no node Ready at all, the last gateway stays.
    lab.now += 10_000;
    lab.converge();
    assert.equal(lab.result('cluster-b').election.reason, 'no-ready-node');
    assert.equal(lab.result('cluster-b').status.gateway, 'b-w1');
  });

  it('keeps a gateway just elected for one heartbeat timeout while its last heartbeat said ready: no handing the role back and forth', () => {
    const lab = converged();
    const t = lab.now;
    lab.now = t + 2000;
    lab.heartbeat('cluster-b', 'b-w1');
    lab.now = t + 3000; // b-gw's beat is 3 s old, b-w1's 1 s: b-w1 takes over
    lab.step('cluster-b');
    assert.deepEqual(lab.result('cluster-b').election, { gateway: 'b-w1', reason: 'elected', since: t + 3000 });

    // 0.8 s later b-w1's renewals lag its move (its beat is 1.8 s old) while b-gw is back: b-w1 keeps the role.
    lab.now = t + 3800;
    lab.heartbeat('cluster-b', 'b-gw');
    lab.step('cluster-b');
    assert.deepEqual(lab.result('cluster-b').election, { gateway: 'b-w1', reason: 'settling', since: t + 3000 });
    assert.deepEqual(lab.result('cluster-b').status.readyNodes, ['b-gw']);

    // One heartbeat timeout after its election, a b-w1 still silent is replaced.
    lab.now = t + 4600;
    lab.step('cluster-b');
    assert.deepEqual(lab.result('cluster-b').election, { gateway: 'b-gw', reason: 'elected', since: t + 4600 });

    // A gateway just elected that says it is not ready is replaced at once.
    lab.now = t + 4700;
    lab.heartbeat('cluster-b', 'b-w1');
    lab.heartbeat('cluster-b', 'b-gw', false);
    lab.step('cluster-b');
    assert.deepEqual(lab.result('cluster-b').election, { gateway: 'b-w1', reason: 'elected', since: t + 4700 });
  });

  it('at start-up, keeps the named gateway until it has had one heartbeat timeout to report', () => {
    const lab = new Lab();
    const start = lab.now;
    for (const c of lab.controllers.values()) c.startedAt = start;
    lab.step('cluster-b');
    assert.equal(lab.result('cluster-b').status.gateway, 'b-gw', 'no node has reported: the preferred one is named');
    lab.heartbeat('cluster-b', 'b-w1');
    lab.step('cluster-b');
    assert.deepEqual(
      lab.result('cluster-b').election,
      { gateway: 'b-gw', reason: 'awaiting-first-heartbeat', since: start },
      'b-w1 reported first, b-gw keeps the role',
    );
    lab.now += 2000; // past the 1.5 s timeout: b-gw never reported
    lab.heartbeat('cluster-b', 'b-w1');
    lab.step('cluster-b');
    assert.deepEqual(lab.result('cluster-b').election, { gateway: 'b-w1', reason: 'elected', since: start + 2000 });
  });

  it('removing a peer cleans both sides: files, IPAM, node specs, reflections', () => {
    const lab = converged();
    lab.reconfigure('cluster-b', (doc) => {
      doc.peers = ['cluster-a'];
      doc.reflections = [];
    });
    lab.step('cluster-b');
    assert.deepEqual(lab.result('cluster-b').removedPeers, ['cluster-c']);
    lab.converge();
    const b = lab.controllers.get('cluster-b')!;
    assert.equal(b.ipam!.primary.peers.has('cluster-c'), false);
    assert.equal(b.ipam!.primary.external.byEndpoint.size, 0, "the reflected pod's ExternalCIDR address is released");
    for (const path of [
      runDirPaths.spec('cluster-b', 'cluster-c'),
      runDirPaths.status('cluster-c', 'cluster-b'),
      runDirPaths.status('cluster-b', 'cluster-c'),
    ]) {
      assert.equal(lab.disk.read(path), undefined, `${path} is gone`);
    }
    assert.deepEqual(lab.disk.json(runDirPaths.reflections('cluster-b')), []);
    for (const node of ['b-gw', 'b-w1']) {
      assert.deepEqual(peersOf(lab.nodeSpec('cluster-b', node)), ['cluster-a']);
      assert.deepEqual(lab.nodeSpec('cluster-b', node).natMappings, []);
    }
    for (const node of ['c-gw', 'c-w1']) assert.deepEqual(peersOf(lab.nodeSpec('cluster-c', node)), []);
    assert.deepEqual(lab.result('cluster-c').status.peers, [{ clusterId: 'cluster-b', state: 'waiting-for-peer' }]);
    assert.equal(lab.result('cluster-c').tunnels.length, 0);
    assertConsistent(lab, 'cluster-a', 'cluster-b');
  });

  it('reports a peer as remapped while it has not answered, and a half-written file as refused, read again later', () => {
    const lab = new Lab();
    lab.heartbeatAll();
    lab.step('cluster-a');
    lab.step('cluster-b');
    // B processed A's spec (A's networks placed, status written) but A has not answered B's yet.
    assert.deepEqual(lab.result('cluster-b').status.peers, [
      { clusterId: 'cluster-a', state: 'remapped' },
      { clusterId: 'cluster-c', state: 'waiting-for-peer' },
    ]);
    const path = runDirPaths.spec('cluster-c', 'cluster-b');
    lab.disk.write(path, '{"clusterId": "cluster-c", "remoteCl');
    lab.step('cluster-b');
    assert.ok(
      lab.result('cluster-b').problems.some((p) => p.startsWith(path)),
      'the truncated spec is reported',
    );
    assert.deepEqual(lab.result('cluster-b').status.peers[1], {
      clusterId: 'cluster-c',
      state: 'refused',
      reason: `${path}: not valid JSON (unterminated string at character 37); read again next round`,
    });
    lab.disk.remove(path);
    lab.converge();
    assert.deepEqual(lab.result('cluster-b').problems, []);
    assertConsistent(lab, 'cluster-b', 'cluster-c');
  });

  it("refuses a peer's NetworkConfig that the dataplanes cannot carry for that peer alone, and plans only specs every agent takes (issue 24)", () => {
    for (const [change, field, value] of [
      [{ podCIDR: 'fd00::/48' }, 'spec.podCIDR', 'fd00::/48'],
      [{ externalCIDR: 'fd00:1::/64' }, 'spec.externalCIDR', 'fd00:1::/64'],
      [{ endpoint: { address: '2001:db8::1', port: 4789 } }, 'spec.endpoint.address', '2001:db8::1'],
      [{ endpoint: { address: '0.0.0.0', port: 4789 } }, 'spec.endpoint.address', '0.0.0.0'],
      [{ endpoint: { address: '127.0.0.1', port: 4789 } }, 'spec.endpoint.address', '127.0.0.1'],
      [{ podCIDR: '224.0.0.0/4' }, 'spec.podCIDR', '224.0.0.0/4'],
    ] as const) {
      const lab = converged();
      const path = runDirPaths.spec('cluster-c', 'cluster-b');
      lab.disk.write(path, JSON.stringify({ ...(lab.disk.json(path) as object), ...change }));
      lab.step('cluster-b');
      const b = lab.result('cluster-b');
      const refused = b.status.peers.find((p) => p.clusterId === 'cluster-c')!;
      assert.equal(refused.state, 'refused', `${field} ${value}`);
      assert.ok(
        refused.reason?.includes(`${field}: `) && refused.reason.includes(JSON.stringify(value)),
        `the reason names ${field} and ${value}: ${refused.reason}`,
      );
      assert.deepEqual(
        b.status.peers.find((p) => p.clusterId === 'cluster-a'),
        { clusterId: 'cluster-a', state: 'ready' },
        'the other peering goes on',
      );
      assert.equal(lab.disk.read(runDirPaths.status('cluster-c', 'cluster-b')), undefined, 'no answer on a refused NetworkConfig');
      for (const node of ['b-gw', 'b-w1']) {
        const spec = readNodeDataplane(lab.disk.json(runDirPaths.nodeSpec('cluster-b', node))).spec;
        requireOneUnderlayFamily(spec);
        assert.deepEqual(
          spec.peers.map((p) => p.clusterId),
          ['cluster-a'],
          `${node} carries the ready peering only`,
        );
      }
    }
  });

  it("refuses a peer's answer that remaps our networks out of unicast space, keeping the peering unready with the reason", () => {
    const lab = converged();
    const path = runDirPaths.status('cluster-b', 'cluster-c');
    lab.disk.write(path, JSON.stringify({ ...(lab.disk.json(path) as object), remappedPodCIDR: '127.0.0.0/16' }));
    lab.step('cluster-b');
    const peer = lab.result('cluster-b').status.peers.find((p) => p.clusterId === 'cluster-c')!;
    assert.equal(peer.state, 'remapped');
    assert.match(peer.reason ?? '', /status\.remappedPodCIDR: overlaps 127\.0\.0\.0\/8, loopback.*\(got "127\.0\.0\.0\/16"\)/);
  });

  it('ignores a status that answers networks the cluster no longer has', () => {
    const lab = converged();
    const path = runDirPaths.status('cluster-c', 'cluster-b');
    const status = JSON.parse(lab.disk.read(path)!) as { observed: { podCIDR: string } };
    status.observed.podCIDR = '10.3.0.0/20';
    lab.disk.write(path, JSON.stringify(status));
    lab.step('cluster-c');
    assert.deepEqual(lab.result('cluster-c').status.peers, [{ clusterId: 'cluster-b', state: 'remapped' }]);
  });
});
