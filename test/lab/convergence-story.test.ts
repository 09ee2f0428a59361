import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpecsSeen, controllerDecisions } from '../../lab/src/convergence-story';

describe('why a lab did not converge', () => {
  it('counts the distinct specs each node was given, naming only the nodes given more than one', () => {
    const seen = new SpecsSeen();
    for (const [node, digest] of [
      ['a', '1'],
      ['a', '1'],
      ['b', '1'],
      ['b', '2'],
      ['b', '1'],
      ['b', '3'],
    ])
      seen.saw(node!, digest!);
    assert.equal(seen.changes(), 'b 3');
  });

  it("tells the controllers' last gateway and peer decisions from their logs, and nothing else", () => {
    const logs = mkdtempSync(join(tmpdir(), 'strait-story-'));
    try {
      const line = (o: object) => JSON.stringify({ level: 30, ...o });
      writeFileSync(
        join(logs, 'controller-cluster-a.log'),
        [
          line({ msg: 'controller started' }),
          line({ msg: 'gateway elected', gateway: 'a-gw' }),
          'not JSON',
          line({ msg: 'peer refused', peer: 'cluster-b', state: 'refused', reason: 'spec.podCIDR: ...' }),
          line({ msg: 'gateway changed', gateway: 'a-w1', previous: 'a-gw' }),
        ].join('\n'),
      );
      writeFileSync(join(logs, 'agent-a-gw.log'), line({ msg: 'gateway changed' }));
      assert.deepEqual(controllerDecisions(logs, 2), [
        'controller-cluster-a: peer refused {"peer":"cluster-b","state":"refused","reason":"spec.podCIDR: ..."}',
        'controller-cluster-a: gateway changed {"gateway":"a-w1","previous":"a-gw"}',
      ]);
      assert.deepEqual(controllerDecisions(join(logs, 'none')), []);
    } finally {
      rmSync(logs, { recursive: true, force: true });
    }
  });
});
