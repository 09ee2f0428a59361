import assert from 'node:assert/strict';
import {
  type Heartbeat,
  aliveCandidates,
  electGateway,
  gatewayAddress,
  isReady,
  probedVerdicts,
  readyNodes,
} from '../../src/controller/election';
import { parseIp } from '../../src/net/cidr';

const ip = (text: string) => parseIp('test', text);

const now = Date.parse('2026-01-01T00:00:10.000Z');
const at = (secondsBefore: number) => new Date(now - secondsBefore * 1000).toISOString();

describe('controller gateway election', () => {
  it('a node is Ready only with ready:true and a heartbeat no older than the timeout', () => {
    assert.equal(isReady({ ready: true, time: at(1) }, now, 1.5), true);
    assert.equal(isReady({ ready: true, time: at(1.5) }, now, 1.5), true);
    assert.equal(isReady({ ready: true, time: at(1.6) }, now, 1.5), false);
    assert.equal(isReady({ ready: false, time: at(0) }, now, 1.5), false);
    assert.equal(isReady({ ready: true, time: 'yesterday-ish' }, now, 1.5), false);
    assert.equal(isReady(undefined, now, 1.5), false);
  });

  it("a stopping agent's last heartbeat stays Ready for its validFor when that is longer than the timeout, never shorter", () => {
    assert.equal(isReady({ ready: true, time: at(4.9), validFor: 5 }, now, 0.75), true);
    assert.equal(isReady({ ready: true, time: at(5), validFor: 5 }, now, 0.75), true);
    assert.equal(isReady({ ready: true, time: at(5.1), validFor: 5 }, now, 0.75), false);
    // A validFor shorter than the timeout does not shorten it (an emulated lab's timeout is 120 s).
    assert.equal(isReady({ ready: true, time: at(60), validFor: 5 }, now, 120), true);
    assert.equal(isReady({ ready: false, time: at(0), validFor: 5 }, now, 0.75), false);
  });

  it('lists the Ready nodes among the configured ones', () => {
    const heartbeats = new Map([
      ['a', { ready: true, time: at(0.1) }],
      ['b', { ready: true, time: at(9) }],
      ['stranger', { ready: true, time: at(0) }],
    ]);
    assert.deepEqual(readyNodes([{ name: 'a' }, { name: 'b' }, { name: 'c' }], heartbeats, now, 1.5), ['a']);
  });

  const nodes = [
    { name: 'n3' },
    { name: 'n2', publicAddress: ip('203.0.113.2') },
    { name: 'n1' },
    { name: 'n4', publicAddress: ip('203.0.113.4') },
  ];

  it('keeps the current gateway while it is Ready, even when a preferred node is Ready too', () => {
    assert.deepEqual(electGateway(nodes, ['n1', 'n2', 'n3'], 'n3'), { gateway: 'n3', reason: 'kept' });
  });

  it('replaces a gateway that is not Ready: nodes with a public address first, then the name order', () => {
    assert.deepEqual(electGateway(nodes, ['n1', 'n3', 'n4', 'n2'], 'gone'), { gateway: 'n2', reason: 'elected' });
    assert.deepEqual(electGateway(nodes, ['n1', 'n4'], 'n2'), { gateway: 'n4', reason: 'elected' });
    assert.deepEqual(electGateway(nodes, ['n3', 'n1'], 'n2'), { gateway: 'n1', reason: 'elected' });
    assert.deepEqual(electGateway(nodes, ['n3'], undefined), { gateway: 'n3', reason: 'elected' });
  });

  it('keeps a gateway that has not reported yet while the controller starts, instead of the first node to report', () => {
    assert.deepEqual(electGateway(nodes, ['n1'], 'n2', ['n2', 'n3', 'n4']), { gateway: 'n2', reason: 'awaiting-first-heartbeat' });
    assert.deepEqual(
      electGateway(nodes, ['n1'], 'n2', ['n3']),
      { gateway: 'n1', reason: 'elected' },
      'one that reported and is not Ready is replaced',
    );
    assert.deepEqual(electGateway(nodes, ['n1', 'n2'], 'n2', ['n2']), { gateway: 'n2', reason: 'kept' });
  });

  it('keeps a gateway just elected (settling) rather than the Ready nodes; a start-up grace and Readiness come first', () => {
    assert.deepEqual(electGateway(nodes, ['n1', 'n2'], 'n3', [], true), { gateway: 'n3', reason: 'settling' });
    assert.deepEqual(electGateway(nodes, ['n1', 'n2'], 'n3', [], false), { gateway: 'n2', reason: 'elected' });
    assert.deepEqual(electGateway(nodes, ['n3'], 'n3', [], true), { gateway: 'n3', reason: 'kept' });
    assert.deepEqual(electGateway(nodes, ['n1'], 'n3', ['n3'], true), { gateway: 'n3', reason: 'awaiting-first-heartbeat' });
    assert.deepEqual(
      electGateway(nodes, ['n1'], 'removed-node', [], true),
      { gateway: 'n1', reason: 'elected' },
      'a gateway no longer configured is not kept',
    );
  });

  it('keeps the last gateway when no node is Ready; on a first start names the preferred node', () => {
    assert.deepEqual(electGateway(nodes, [], 'n3'), { gateway: 'n3', reason: 'no-ready-node' });
    assert.deepEqual(electGateway(nodes, [], undefined), { gateway: 'n2', reason: 'no-ready-node' });
    assert.deepEqual(electGateway([{ name: 'b' }, { name: 'a' }], [], 'removed-node'), { gateway: 'a', reason: 'no-ready-node' });
  });

  it('peers tunnel to the public address, else the underlay address', () => {
    assert.deepEqual(
      gatewayAddress({ name: 'g', underlayAddress: ip('192.168.1.1'), publicAddress: ip('203.0.113.1') }),
      ip('203.0.113.1'),
    );
    assert.deepEqual(gatewayAddress({ name: 'g', underlayAddress: ip('192.168.1.1') }), ip('192.168.1.1'));
  });

  describe("the datapath's answers (the candidates' probes of each other)", () => {
    const candidates = [{ name: 'a' }, { name: 'b' }, { name: 'c' }];
    const fresh = (probes: [string, 'up' | 'down'][] = []) => ({
      ready: true,
      time: at(0.1),
      gatewayProbes: probes.map(([name, verdict]) => ({ name, verdict })),
    });
    const stale = { ready: true, time: at(60) };

    it("keeps a candidate whose agent is gone while another's probes see its datapath answer", () => {
      const heartbeats = new Map([
        ['a', stale],
        ['b', fresh([['a', 'up']])],
      ]);
      assert.deepEqual(readyNodes(candidates, heartbeats, now, 1.5), ['b'], 'by heartbeats, a is not Ready');
      assert.deepEqual([...probedVerdicts(candidates, heartbeats, now, 1.5)], [['a', 'up']]);
      assert.deepEqual(aliveCandidates(candidates, heartbeats, now, 1.5), ['a', 'b']);
      assert.deepEqual(electGateway(candidates, aliveCandidates(candidates, heartbeats, now, 1.5), 'a'), { gateway: 'a', reason: 'kept' });
    });

    it('a candidate whose agent says, freshly, that it is not ready is not alive, answering or not', () => {
      const heartbeats = new Map<string, Heartbeat>([
        ['a', { ready: false, time: at(0.1) }],
        ['b', fresh([['a', 'up']])],
      ]);
      assert.deepEqual(aliveCandidates(candidates, heartbeats, now, 1.5), ['b']);
      heartbeats.set('a', { ready: false, time: at(60) });
      assert.deepEqual(
        aliveCandidates(candidates, heartbeats, now, 1.5),
        ['a', 'b'],
        'an old word: the agent is gone, the datapath answers',
      );
    });

    it("a candidate the probes see down is not alive, whatever its agent's heartbeat says", () => {
      const heartbeats = new Map([
        ['a', fresh()],
        ['b', fresh([['a', 'down']])],
      ]);
      assert.deepEqual(aliveCandidates(candidates, heartbeats, now, 1.5), ['b']);
      assert.deepEqual(electGateway(candidates, aliveCandidates(candidates, heartbeats, now, 1.5), 'a'), {
        gateway: 'b',
        reason: 'elected',
      });
    });

    it('a split view keeps the candidate (one reporter still reaches it); reports from a candidate that is not Ready, of itself, or of strangers count for nothing', () => {
      const heartbeats = new Map([
        ['a', fresh()],
        ['b', fresh([['a', 'down']])],
        [
          'c',
          fresh([
            ['a', 'up'],
            ['c', 'down'],
            ['zz', 'down'],
          ]),
        ],
      ]);
      assert.deepEqual([...probedVerdicts(candidates, heartbeats, now, 1.5)], [['a', 'up']]);
      const notReady = new Map([
        ['a', fresh()],
        ['b', { ...fresh([['a', 'down']]), time: at(60) }],
      ]);
      assert.deepEqual(probedVerdicts(candidates, notReady, now, 1.5).size, 0);
      assert.deepEqual(aliveCandidates(candidates, notReady, now, 1.5), ['a'], 'unprobed: its heartbeat judges it');
    });

    it('two candidates die together: their last reports (each saw the other up) count for nothing once a live one sees them down, so the live one is elected (on Kubernetes their Nodes stay Ready for 40 s)', () => {
      const heartbeats = new Map([
        [
          'a',
          fresh([
            ['b', 'up'],
            ['c', 'up'],
          ]),
        ],
        [
          'b',
          fresh([
            ['a', 'up'],
            ['c', 'up'],
          ]),
        ],
        [
          'c',
          fresh([
            ['a', 'down'],
            ['b', 'down'],
          ]),
        ],
      ]);
      assert.deepEqual(
        [...probedVerdicts(candidates, heartbeats, now, 1.5)],
        [
          ['a', 'down'],
          ['b', 'down'],
        ],
      );
      assert.deepEqual(aliveCandidates(candidates, heartbeats, now, 1.5), ['c']);
      assert.deepEqual(electGateway(candidates, aliveCandidates(candidates, heartbeats, now, 1.5), 'a'), {
        gateway: 'c',
        reason: 'elected',
      });
    });

    it('two candidates that see each other down (a split between them) keep the gateway: neither report counts, their heartbeats judge', () => {
      const heartbeats = new Map([
        ['a', fresh([['b', 'down']])],
        ['b', fresh([['a', 'down']])],
      ]);
      assert.equal(probedVerdicts(candidates, heartbeats, now, 1.5).size, 0);
      assert.deepEqual(aliveCandidates(candidates, heartbeats, now, 1.5), ['a', 'b']);
      assert.deepEqual(electGateway(candidates, aliveCandidates(candidates, heartbeats, now, 1.5), 'a'), { gateway: 'a', reason: 'kept' });
    });
  });
});
