import assert from 'node:assert/strict';
import { InputError } from '../../src/errors';
import type { Verdict } from '../../src/liveness/detection';
import { gatewayOrder, isStandby, probeTargets, withLocalGateway } from '../../src/liveness/local-gateway';
import { desiredMaps } from '../../src/dataplane/ebpf/desired-maps';
import { Flags } from '../../src/dataplane/ebpf/layout';
import { LocalGateway } from '../../src/agent/local-gateway';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';
import { captureLog } from '../support/log-capture';
import { parseSamples, series } from '../support/metrics';
import { AgentMetrics } from '../../src/metrics/agent-metrics';
import { hubSpecWith } from '../support/node-specs';

/** Cluster b's three candidates in failover order b-gw, b-c2, b-c3, seen from `self`. */
const spec = (self: string) =>
  hubSpecWith((d) => {
    d.nodes.push(
      { name: 'b-c2', underlayAddress: '192.0.2.13', podCIDRs: ['10.0.2.0/24'] },
      { name: 'b-c3', underlayAddress: '192.0.2.14', podCIDRs: ['10.0.3.0/24'] },
    );
    d.standbyGateways = ['b-c2', 'b-c3'];
    const node = d.nodes.find((n) => n.name === self)!;
    d.node = { name: self, role: self === 'b-gw' ? 'gateway' : 'worker', underlayAddress: node.underlayAddress };
  });
const verdicts = (entries: [string, Verdict][]) => new Map(entries);

describe('local gateway choice (pure)', () => {
  it('probes every gateway of the order but itself, at its underlay address', () => {
    assert.deepEqual(gatewayOrder(spec('b-worker')), ['b-gw', 'b-c2', 'b-c3']);
    assert.deepEqual(
      [...probeTargets(spec('b-worker'))],
      [
        ['b-gw', '192.0.2.11'],
        ['b-c2', '192.0.2.13'],
        ['b-c3', '192.0.2.14'],
      ],
    );
    assert.deepEqual([...probeTargets(spec('b-c2')).keys()], ['b-gw', 'b-c3']);
  });

  it('keeps the published spec (the same object) while the active gateway is not down', () => {
    const s = spec('b-worker');
    assert.equal(withLocalGateway(s, verdicts([])), s);
    assert.equal(
      withLocalGateway(
        s,
        verdicts([
          ['b-gw', 'up'],
          ['b-c2', 'down'],
        ]),
      ),
      s,
    );
    assert.equal(withLocalGateway(s, verdicts([['b-gw', 'unknown']])), s);
  });

  it('a worker sends through the first standby that is not down; a standby that chooses itself becomes the gateway', () => {
    const worker = withLocalGateway(spec('b-worker'), verdicts([['b-gw', 'down']]));
    assert.deepEqual(worker.activeGateway, { name: 'b-c2', underlayAddress: { family: 4, value: 0xc000020dn } });
    assert.equal(worker.node.role, 'worker');
    assert.equal(
      withLocalGateway(
        spec('b-worker'),
        verdicts([
          ['b-gw', 'down'],
          ['b-c2', 'down'],
        ]),
      ).activeGateway.name,
      'b-c3',
    );
    const standby = withLocalGateway(spec('b-c2'), verdicts([['b-gw', 'down']]));
    assert.equal(standby.activeGateway.name, 'b-c2');
    assert.equal(standby.node.role, 'gateway');
    // The third candidate still reaches the second: it follows it, as a worker.
    assert.equal(withLocalGateway(spec('b-c3'), verdicts([['b-gw', 'down']])).node.role, 'worker');
    // The published gateway dead in the eyes of its own node means nothing: it does not judge itself.
    assert.equal(withLocalGateway(spec('b-gw'), verdicts([['b-gw', 'down']])).node.role, 'gateway');
  });

  it("a candidate sends to the first of a peer gateway's addresses that is not down; workers do not probe peers", () => {
    const withStandbys = (self: string) =>
      hubSpecWith((d) => {
        d.nodes.push({ name: 'b-c2', underlayAddress: '192.0.2.13', podCIDRs: ['10.0.2.0/24'] });
        d.standbyGateways = ['b-c2'];
        d.peers[0]!.endpoint.standbyAddresses = ['203.0.113.21', '203.0.113.22'];
        const node = d.nodes.find((n) => n.name === self)!;
        d.node = { name: self, role: self === 'b-gw' ? 'gateway' : 'worker', underlayAddress: node.underlayAddress };
      });
    const gw = withStandbys('b-gw');
    assert.deepEqual(
      [...probeTargets(gw)],
      [
        ['b-c2', '192.0.2.13'],
        ['peer:203.0.113.1', '203.0.113.1'],
        ['peer:203.0.113.21', '203.0.113.21'],
        ['peer:203.0.113.22', '203.0.113.22'],
      ],
      "cluster-c's gateway has no standby: nothing to choose, nothing probed",
    );
    assert.deepEqual([...probeTargets(withStandbys('b-worker')).keys()], ['b-gw', 'b-c2']);
    assert.equal(withLocalGateway(gw, verdicts([['peer:203.0.113.1', 'up']])), gw);
    const failed = withLocalGateway(
      gw,
      verdicts([
        ['peer:203.0.113.1', 'down'],
        ['peer:203.0.113.21', 'down'],
      ]),
    );
    assert.equal(failed.peers[0]!.endpoint.address.value, 0xcb007116n, '203.0.113.22');
    assert.deepEqual(failed.peers[0]!.endpoint.standbyAddresses, gw.peers[0]!.endpoint.standbyAddresses);
    assert.equal(failed.peers[1], gw.peers[1], 'the other peer is untouched');
    assert.equal(failed.activeGateway, gw.activeGateway);
    // An encrypted peering is neither probed (the probes would cross the public network in the clear) nor failed over locally.
    const encrypted = hubSpecWith((d) => {
      d.peers[0]!.endpoint.standbyAddresses = ['203.0.113.21'];
      d.peers[0]!.transport = 'ipsec';
    });
    assert.deepEqual([...probeTargets(encrypted).keys()], []);
    assert.equal(withLocalGateway(encrypted, verdicts([['peer:203.0.113.1', 'down']])), encrypted);
  });

  it('a standby is flagged in its datapath config as such (it translates what arrives), until it chooses itself', () => {
    const flags = (s: NodeDataplaneSpec) => desiredMaps(s, 42).config[0]![1].flags;
    assert.equal(isStandby(spec('b-c2')), true);
    assert.equal(flags(spec('b-c2')), Flags.Standby);
    assert.equal(flags(spec('b-worker')), 0);
    assert.equal(flags(spec('b-gw')), Flags.Gateway);
    const promoted = withLocalGateway(spec('b-c2'), verdicts([['b-gw', 'down']]));
    assert.equal(isStandby(promoted), false);
    assert.equal(flags(promoted), Flags.Gateway);
  });

  it('the reader refuses standbys that are not nodes, the active gateway itself, or repeated, naming the field', () => {
    const refused = (standby: string[], field: string, value: string) =>
      assert.throws(
        () => hubSpecWith((d) => (d.standbyGateways = standby)),
        (e: unknown) => e instanceof InputError && e.field === field && e.value === value,
      );
    refused(['b-nowhere'], 'spec.standbyGateways[0]', 'b-nowhere');
    refused(['b-worker', 'b-gw'], 'spec.standbyGateways[1]', 'b-gw');
    refused(['b-worker', 'b-worker'], 'spec.standbyGateways[1]', 'b-worker');
  });
});

describe("the agent's local gateway", () => {
  it('aims the probes at the candidates, returns the same spec object while nothing changed, logs leaving and returning', () => {
    let current = verdicts([]);
    const targets: string[][] = [];
    const logs = captureLog();
    const local = new LocalGateway({ setTargets: (t) => targets.push([...t.keys()]), verdicts: () => current }, logs.log);
    const s: NodeDataplaneSpec = spec('b-worker');
    assert.equal(local.effective(s), s);
    assert.equal(local.effective(s), s);
    assert.deepEqual(targets, [['b-gw', 'b-c2', 'b-c3']], 'targets set once per spec');
    current = verdicts([['b-gw', 'down']]);
    const failed = local.effective(s);
    assert.equal(failed.activeGateway.name, 'b-c2');
    assert.equal(local.effective(s), failed, 'the same object while the choice holds: the dataplane has nothing to diff');
    assert.deepEqual(
      { ...local.metricsState(), verdicts: [...local.metricsState().verdicts] },
      {
        verdicts: [['b-gw', 'down']],
        overriding: true,
        switches: 1,
      },
    );
    current = verdicts([['b-gw', 'up']]);
    assert.equal(local.effective(s), s);
    assert.deepEqual(
      logs.lines.map((l) => l.msg),
      ["gateways not answering this node's probes: sending through others", 'the published gateways answer again: following them'],
    );
    assert.deepEqual(
      { overriding: local.metricsState().overriding, switches: local.metricsState().switches },
      { overriding: false, switches: 2 },
    );
  });

  it('its metrics: a series per target heard (1 answering, 0 down), whether it overrides the published gateways, and how often it switched', async () => {
    let current = verdicts([
      ['b-gw', 'down'],
      ['b-c2', 'up'],
      ['b-c3', 'unknown'],
    ]);
    const local = new LocalGateway({ setTargets: () => {}, verdicts: () => current }, captureLog().log);
    const metrics = new AgentMetrics({
      notReady: () => undefined,
      state: () => ({ dataplane: 'ebpf', specGeneration: 1, gateway: local.metricsState() }),
    });
    const scrape = async () => parseSamples(await metrics.registry.metrics());
    local.effective(spec('b-worker'));
    assert.deepEqual(
      series(await scrape(), 'strait_agent_gateway_probe_up'),
      ['target=b-c2 1', 'target=b-gw 0'],
      'b-c3 never heard: no series',
    );
    assert.deepEqual(series(await scrape(), 'strait_agent_gateway_overridden'), ['1']);
    assert.deepEqual(series(await scrape(), 'strait_agent_gateway_switches_total'), ['0'], 'the first choice is no switch');
    current = verdicts([['b-gw', 'up']]);
    local.effective(spec('b-worker'));
    assert.deepEqual(series(await scrape(), 'strait_agent_gateway_overridden'), ['0']);
    assert.deepEqual(series(await scrape(), 'strait_agent_gateway_switches_total'), ['1']);
  });
});
