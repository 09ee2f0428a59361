import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Pool } from '../../src/pool-ipam/model';
import { sortPools } from '../../src/pool-ipam/sort';
import { pool } from './fixtures';

const selector = { matchLabels: { any: 'x' } };
const properties = {
  podAffinity: { podAffinity: selector },
  nodeName: { nodeName: ['node-a'] },
  nodeAffinity: { nodeAffinity: selector },
  namespaceName: { namespaceName: ['shop'] },
  namespaceAffinity: { namespaceAffinity: selector },
  multusName: { multusName: ['macvlan-east'] },
} as const;
type Property = keyof typeof properties;
const order = Object.keys(properties) as Property[];
const poolWith = (name: string, ...props: Property[]): Pool => pool(name, Object.assign({}, ...props.map((p) => properties[p])));
const names = (pools: Pool[]) => pools.map((p) => p.name);

describe("pool IPAM: candidate pool sorting, the document's priorities", () => {
  it('example 1: IPPoolA with podAffinity and nodeName precedes IPPoolB with podAffinity alone', () => {
    const a = poolWith('A', 'podAffinity', 'nodeName');
    const b = poolWith('B', 'podAffinity');
    assert.deepEqual(names(sortPools([b, a])), ['A', 'B']);
    assert.deepEqual(names(sortPools([a, b])), ['A', 'B']);
  });

  it('example 2: IPPoolA with podAffinity alone precedes IPPoolB with nodeName and namespaceName', () => {
    const a = poolWith('A', 'podAffinity');
    const b = poolWith('B', 'nodeName', 'namespaceName');
    assert.deepEqual(names(sortPools([b, a])), ['A', 'B']);
    assert.deepEqual(names(sortPools([a, b])), ['A', 'B']);
  });

  it('example 3: IPPoolA with podAffinity and nodeName precedes IPPoolB with podAffinity, namespaceName and multusName', () => {
    const a = poolWith('A', 'podAffinity', 'nodeName');
    const b = poolWith('B', 'podAffinity', 'namespaceName', 'multusName');
    assert.deepEqual(names(sortPools([b, a])), ['A', 'B']);
    assert.deepEqual(names(sortPools([a, b])), ['A', 'B']);
  });

  it('one property each: podAffinity, then nodeName, nodeAffinity, namespaceName, namespaceAffinity, multusName, then none', () => {
    const pools = [poolWith('none'), ...order.map((p) => poolWith(p, p))].reverse();
    assert.deepEqual(names(sortPools(pools)), [
      'podAffinity',
      'nodeName',
      'nodeAffinity',
      'namespaceName',
      'namespaceAffinity',
      'multusName',
      'none',
    ]);
  });

  it("ties keep the candidates' order (a CNI default list is the administrator's preference)", () => {
    const pools = [poolWith('c2'), poolWith('n1', 'nodeName'), poolWith('c1'), poolWith('n2', 'nodeName'), poolWith('c3')];
    assert.deepEqual(names(sortPools(pools)), ['n1', 'n2', 'c2', 'c1', 'c3']);
    assert.deepEqual(names(pools), ['c2', 'n1', 'c1', 'n2', 'c3'], 'the input is not changed');
  });

  it('property: a stable permutation in which no pool is preceded by one the priorities rank lower', () => {
    fc.assert(
      fc.property(fc.array(fc.subarray(order), { maxLength: 12 }), (propsList) => {
        const input = propsList.map((props, i) => poolWith(`p${i}`, ...props));
        const output = sortPools(input);
        assert.deepEqual(names(output).sort(), names(input).sort());
        const presence = (p: Pool) => order.map((prop) => propsList[Number(p.name.slice(1))]!.includes(prop));
        /** The first property (in priority order) that one has and the other has not decides. */
        const beats = (x: Pool, y: Pool) => {
          const [px, py] = [presence(x), presence(y)];
          const i = px.findIndex((v, k) => v !== py[k]);
          return i >= 0 && px[i]!;
        };
        for (let i = 0; i < output.length; i++) {
          for (let j = i + 1; j < output.length; j++) {
            const [x, y] = [output[i]!, output[j]!];
            assert.ok(!beats(y, x), `${y.name} ranks above ${x.name}`);
            if (!beats(x, y)) assert.ok(input.indexOf(x) < input.indexOf(y), `tie ${x.name}, ${y.name} not in candidate order`);
          }
        }
      }),
    );
  });
});
