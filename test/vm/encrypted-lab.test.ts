/**
 * The lab with an encrypted peering (src/lab/topologies/encrypted.yaml): A-B over IPsec, B-C over VXLAN,
 * hub transit from one into the other. On a kernel with ESP and xfrm interfaces (`npm run test:vm` boots
 * one) every check must pass with only ESP on the wire between A and B, the SAs must count the traffic,
 * a wrong key on one side must stop A-B (and only A-B), and no secret may reach a log. On a kernel
 * without them (the usual test machine) `lab up` must refuse at once, naming what is missing.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StateError } from '../../src/errors';
import { derivePeeringKeys, peeringSecret } from '../../src/fallback/ipsec-keys';
import { run } from '../../src/kernel/command';
import { addressSeenFrom } from '../../src/lab/checks';
import { labDown, labUp, savedTopology, secretsDir } from '../../src/lab/lab';
import { clusterViews, failureSummary, labTest } from '../../src/lab/lab-test';
import { nodeNetns } from '../../src/lab/names';
import { labNamespaces } from '../../src/lab/network';
import { defaultTopologyPath } from '../../src/lab/topology';
import { describeMissing, encryptionRequirements } from '../../src/probe/features';
import { probeKernel } from '../../src/probe/probe';
import { requireRoot } from '../support/kernel';
import { gatewayOf, pingFor } from '../support/lab-suite';

const runDir = `/run/strait/lab-vm-${process.pid}`;
const topologyPath = join(defaultTopologyPath, '..', 'encrypted.yaml');
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Pings answered out of `count` (0.2 s apart, 1 s deadline each). */
const pings = async (pod: string, address: string, count: number) => (await pingFor(pod, address, count, 0.2)).received;


/** Packets the gateway's Strait SAs have carried (`ip -s xfrm state`: "N(bytes), M(packets)" under "lifetime current"). */
function saPackets(node: string): number[] {
  const text = run(['ip', '-n', nodeNetns(node), '-s', 'xfrm', 'state']);
  return [...text.matchAll(/lifetime current:\s*\n\s*\d+\(bytes\), (\d+)\(packets\)/g)].map((m) => Number(m[1]));
}

/** Replaces a secret file the way a Secret volume is updated: a new file renamed over the old one. */
function writeSecret(path: string, base64: string): void {
  writeFileSync(`${path}.new`, base64, { mode: 0o600 });
  renameSync(`${path}.new`, path);
}

/**
 * Under emulation (this project's CI VM has no usable hardware KVM for Debian's kernel) node processes
 * start ten times slower: heartbeats must not age out while the agents start, and convergence gets time.
 */
const slowMachine = { heartbeatTimeout: 30, convergeTimeoutMs: 300_000 };

/** Polls `ok` every second up to `seconds`; true when it held. */
async function eventually(seconds: number, ok: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < seconds; i++) {
    if (await ok()) return true;
    await sleep(1000);
  }
  return false;
}

describe('encrypted lab (IPsec between gateways)', function () {
  requireRoot(this);
  this.timeout(600_000);
  let lacks: string[] = [];
  let up = false;

  before(async function (this: Mocha.Context) {
    if (labNamespaces().length > 0) this.skip(); // a developer's lab is up: leave it alone
    lacks = describeMissing(encryptionRequirements, await probeKernel());
  });
  afterEach(function (this: Mocha.Context) {
    if (this.currentTest?.state === 'failed') process.stdout.write(`lab output:\n${lines.slice(-60).join('\n')}\n`);
    lines.length = 0;
  });
  after(async () => {
    if (up) await labDown(runDir, say);
  });

  it('refuses the topology up front on a kernel without ESP, building nothing', async function (this: Mocha.Context) {
    if (lacks.length === 0) this.skip(); // this kernel can: the tests below run the lab
    await assert.rejects(labUp(topologyPath, { runDir, dataplane: 'auto', say }), (err: unknown) =>
      err instanceof StateError && /encrypted peerings and this kernel cannot run them: it lacks .*esp/.test(err.message));
    assert.deepEqual(labNamespaces(), [], 'nothing was built');
  });

  it('carries every check with only ESP between the encrypted gateways, and no secret reaches a log', async function (this: Mocha.Context) {
    if (lacks.length > 0) this.skip(); // needs ESP: npm run test:vm
    up = true;
    await labUp(topologyPath, { runDir, dataplane: 'auto', say, ...slowMachine });
    const outcome = await labTest(runDir, say, slowMachine.convergeTimeoutMs);
    assert.equal(outcome.failed, 0, failureSummary(outcome));
    const [ab, bc] = outcome.wire;
    assert.ok(ab!.encrypted && ab!.esp > 0 && ab!.clear === 0, `A-B on the wire: ${ab!.esp} ESP, ${ab!.clear} others`);
    assert.ok(!bc!.encrypted && bc!.clear > 0 && bc!.esp === 0, `B-C on the wire: ${bc!.esp} ESP, ${bc!.clear} others`);
    process.stdout.write(`      wire: A-B ${ab!.esp} ESP packets and ${ab!.clear} others; B-C ${bc!.clear} VXLAN and ${bc!.esp} ESP\n`);
    for (const cluster of ['cluster-a', 'cluster-b']) {
      const counts = saPackets(gatewayOf(runDir, cluster));
      assert.equal(counts.length, 2, `${cluster}'s gateway has one SA each way`);
      assert.ok(counts.every((n) => n > 0), `${cluster}'s SAs carried traffic both ways: ${counts.join(', ')}`);
    }

    // No secret, and no key derived from it, in any log of any process of the lab.
    const secret = readFileSync(join(secretsDir(runDir, 'cluster-a'), 'cluster-b'), 'utf8');
    const keys = derivePeeringKeys(peeringSecret('secret', secret), 'cluster-a', 'cluster-b');
    const forbidden = [secret, Buffer.from(secret, 'base64').toString('hex'), keys.forward.key.reveal().toString('hex'), keys.reverse.key.reveal().toString('hex')];
    const logs = readdirSync(join(runDir, 'logs')).map((f) => readFileSync(join(runDir, 'logs', f), 'utf8')).join('\n').toLowerCase();
    for (const text of forbidden) assert.ok(!logs.includes(text.toLowerCase()), 'a secret or key reached a log');
  });

  it('stops the encrypted peering, and only it, while one side holds a different secret; heals when it is put back', async function (this: Mocha.Context) {
    if (!up) this.skip(); // needs the lab of the test above
    const topology = savedTopology(runDir);
    const views = clusterViews(topology, runDir);
    const toB = addressSeenFrom(topology, views, 'cluster-a', 'cluster-b', '10.0.1.10'); // b-w1-p as A sees it
    const toC = addressSeenFrom(topology, views, 'cluster-b', 'cluster-c', '172.20.1.10'); // c-w1-p as B sees it
    assert.equal(await pings('a-w1-p', toB, 3), 3, 'A reaches B before');

    const bHoldsA = join(secretsDir(runDir, 'cluster-b'), 'cluster-a');
    const right = readFileSync(bHoldsA, 'utf8');
    writeSecret(bHoldsA, randomBytes(32).toString('base64'));
    // B's gateway reads its secret at the next reconcile and then decrypts with other keys.
    assert.ok(await eventually(60, async () => (await pings('a-w1-p', toB, 2)) === 0), 'A-B stops with mismatched keys');
    assert.equal(await pings('a-w1-p', toB, 5), 0, 'no packet crosses A-B with mismatched keys');
    assert.equal(await pings('b-w1-p', toC, 3), 3, 'B-C is unaffected');

    writeSecret(bHoldsA, right);
    assert.ok(await eventually(60, async () => (await pings('a-w1-p', toB, 2)) > 0), 'A-B heals once both sides hold the same secret again');
  });
});
