/**
 * Fuzz: the controller's configuration file (YAML or JSON a person writes), as `strait controller
 * --config` loads it. A file is refused whole, naming the field and the value, or accepted; and what is
 * accepted must be carried: the node specs the controller then plans are taken by every agent (the
 * spec reader and both dataplanes' checks). A configuration an agent would refuse later froze nodes.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { loadControllerConfig } from '../../src/api/controller-config';
import { readNodeDataplane } from '../../src/api/node-dataplane';
import { nodeDataplaneObject } from '../../src/api/node-dataplane-object';
import { InputError, StateError } from '../../src/errors';
import { emptyExchange } from '../../src/controller/exchange-view';
import { reconcile } from '../../src/controller/reconcile';
import { requireOneUnderlayFamily } from '../../src/nodespec/ip-family';
import { cliPath } from '../network-ipam/cli-runner';
import { type Verdict, accepted, documentTexts, fuzzSurface, refused } from '../support/fuzz';
import { noMetricsServer } from '../support/metrics';

const valid = {
  clusterId: 'cluster-b',
  podCIDR: '10.0.0.0/16',
  externalCIDR: '10.200.0.0/24',
  serviceCIDR: '10.96.0.0/12',
  reserved: ['192.168.100.0/24'],
  pools: ['10.0.0.0/8', '172.16.0.0/12'],
  peers: ['cluster-a', { clusterId: 'cluster-c', encryption: 'ipsec' }],
  reflections: [{ to: 'cluster-a', fromPeer: 'cluster-c', podIP: '10.2.1.10' }],
  nodes: [
    { name: 'b-gw', underlayAddress: '192.168.2.1', podCIDRs: ['10.0.0.0/24'], publicAddress: '203.0.113.2' },
    { name: 'b-w1', underlayAddress: '192.168.2.2', podCIDRs: ['10.0.1.0/24'], gatewayCandidate: false },
  ],
  heartbeatTimeout: 1.5,
  interval: 0.2,
  tunnelMTU: 1400,
};

/** YAML a person could write by mistake, or an attacker on purpose. */
const yamlCases = [
  // An alias bomb: the parser must refuse it, not expand it.
  `a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\nclusterId: *f\n`,
  'clusterId: cluster-b\nclusterId: cluster-c\n',
  'clusterId: !!js/function "function () {}"\n',
  'podCIDR: 10.0.0.0/16\n\t- tab\n',
  '%YAML 9.9\n---\nclusterId: x\n',
  '---\nclusterId: a\n---\nclusterId: b\n',
  '\uFEFF{"clusterId": 1}',
];

describe('fuzz: the controller configuration', function () {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-fuzz-config-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Every node spec the configuration plans on its first round must be taken by the agents. */
  function assertCarried(path: string): void {
    const config = loadControllerConfig(path);
    const result = reconcile({
      config,
      ipam: undefined,
      exchange: emptyExchange(),
      heartbeats: new Map(),
      previous: undefined,
      now: Date.now(),
    });
    for (const spec of result.nodeSpecs.values()) {
      const read = readNodeDataplane(JSON.parse(JSON.stringify(nodeDataplaneObject(spec)))).spec;
      requireOneUnderlayFamily(read);
    }
  }

  let n = 0;
  const feed = async (text: string): Promise<Verdict> => {
    const path = join(dir, `config-${n++}.yaml`);
    writeFileSync(path, text);
    try {
      loadControllerConfig(path);
    } catch (err) {
      if (err instanceof InputError) return refused(err.message);
      throw err;
    }
    try {
      assertCarried(path);
    } catch (err) {
      // The configuration was accepted, and the controller's first round cannot plan from it: only what
      // cannot be known from the file alone (a pool too small for its own networks) may stop it here.
      if (err instanceof StateError) return refused(`${path}: ${err.message}`);
      throw new Error(`accepted a configuration whose node specs an agent refuses: ${(err as Error).message}\n${text}`);
    }
    return accepted;
  };

  describe('loaded in process (every input)', () => {
    fuzzSurface(() => ({
      name: 'controller configuration',
      inputs: fc.oneof({ weight: 9, arbitrary: documentTexts(valid) }, { weight: 1, arbitrary: fc.constantFrom(...yamlCases) }),
      cases: [
        JSON.stringify(valid),
        // Issue 24: each of these was accepted, and the agents refused the specs it made, or a core was spent.
        JSON.stringify({ ...valid, interval: 1e-9 }),
        JSON.stringify({ ...valid, nodes: [valid.nodes[0], { ...valid.nodes[1], underlayAddress: '192.168.2.1' }] }),
        JSON.stringify({ ...valid, nodes: [{ ...valid.nodes[0], underlayAddress: '0.0.0.0' }, valid.nodes[1]] }),
        JSON.stringify({ ...valid, externalCIDR: 'fd00::/120' }),
        JSON.stringify({
          ...valid,
          podCIDR: 'fd00::/48',
          nodes: [
            { ...valid.nodes[0], podCIDRs: [] },
            { ...valid.nodes[1], podCIDRs: [] },
          ],
        }),
        ...yamlCases,
      ],
      feed,
      timeoutMs: 2000,
    }));
  });

  it('the real process refuses a bad file with the {"error"} JSON naming field and value, exit 1, writing nothing', () => {
    const runDir = join(dir, 'run');
    for (const [doc, error] of [
      [{ ...valid, runDir, interval: 1e-9 }, /^interval: /],
      [{ ...valid, runDir, externalCIDR: 'fd00::/120' }, /^externalCIDR: must be IPv4, as podCIDR .*\(got "fd00::\/120"\)$/],
      [
        { ...valid, runDir, nodes: [valid.nodes[0], { ...valid.nodes[1], underlayAddress: '192.168.2.1' }] },
        /^nodes\[1\]\.underlayAddress: is also nodes\[0\]\.underlayAddress \(got "192\.168\.2\.1"\)$/,
      ],
    ] as const) {
      const path = join(dir, 'process.json');
      writeFileSync(path, JSON.stringify(doc));
      const run = spawnSync(process.execPath, [cliPath, 'controller', '--config', path, '--once', ...noMetricsServer], {
        encoding: 'utf8',
        timeout: 10_000,
      });
      assert.equal(run.status, 1, run.stderr);
      assert.match((JSON.parse(run.stderr) as { error: string }).error, error);
      assert.deepEqual(readdirSync(dir).includes('run'), false, 'no run directory made');
    }
  });
});
