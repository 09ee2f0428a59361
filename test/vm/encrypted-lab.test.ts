/**
 * The lab with an encrypted peering (lab/src/topologies/encrypted.yaml): A-B over IPsec, B-C over VXLAN,
 * hub transit from one into the other. On a kernel with ESP and xfrm interfaces (`npm run test:vm` boots
 * one) every check must pass with only ESP on the wire between A and B, the SAs must count the traffic,
 * a wrong key on one side must stop A-B (and only A-B), and no secret may reach a log. On a kernel
 * without them (the usual test machine) `lab up` must refuse at once, naming what is missing.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { type Dirent, existsSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StateError } from '../../src/errors';
import { derivePeeringKeys, peeringSecret } from '../../src/dataplane/kernel/ipsec-keys';
import { run } from '../../src/kernel/command';
import { addressSeenFrom } from '../../lab/src/checks';
import { labDown, labUp, savedTopology, secretsDir } from '../../lab/src/lab';
import { clusterViews, failureSummary, labTest } from '../../lab/src/lab-test';
import { defaultTopologyPath, nodeNetns } from '../../lab/src/names';
import { childPid, knownProcesses, processPid } from '../../lab/src/processes';
import { labNamespaces } from '../../lab/src/network';
import { encryptionRequirements } from '../../src/probe/features';
import { cannotRunHere, requireKernel, requireRoot } from '../support/kernel';
import { saPacketCounts } from '../support/xfrm-state';
import { emulatedLab, emulatedPace, gatewayOf, heartbeatOf, pingFor } from '../support/lab-suite';

const runDir = `/run/strait/lab-vm-${process.pid}`;
const topologyPath = join(defaultTopologyPath, '..', 'encrypted.yaml');
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Pings answered out of `count` (0.2 s apart, 1 s deadline each). */
const pings = async (pod: string, address: string, count: number) => (await pingFor(pod, address, count, 0.2)).received;

/** Packets the gateway's Strait SAs have carried. */
const saPackets = (node: string) => saPacketCounts(run(['ip', '-n', nodeNetns(node), '-s', 'xfrm', 'state']));

/** Replaces a secret file the way a Secret volume is updated: a new file renamed over the old one. */
function writeSecret(path: string, base64: string): void {
  writeFileSync(`${path}.new`, base64, { mode: 0o600 });
  renameSync(`${path}.new`, path);
}

const heartbeatTime = (cluster: string, node: string) => Date.parse(heartbeatOf(runDir, cluster, node).time);

/**
 * Waits until a node's agent has run a whole reconcile that began after `since`: the second heartbeat
 * written after it (the first may end a reconcile that began before). Bounded at 60 s for emulation.
 */
async function nextReconcile(cluster: string, node: string, since: number): Promise<void> {
  let seen = 0;
  let last = since;
  for (const deadline = Date.now() + 60_000; seen < 2; await sleep(50)) {
    assert.ok(Date.now() < deadline, `${node}'s agent ran no reconcile in 60 s`);
    const time = heartbeatTime(cluster, node);
    if (time > last) {
      seen++;
      last = time;
    }
  }
}

/** A digest of each Strait ESP state's key on a gateway (never the key itself: it must not reach a log). */
const stateKeys = (node: string) =>
  run(['ip', '-n', nodeNetns(node), 'xfrm', 'state'])
    .match(/0x[0-9a-f]{40}/g)
    ?.map((k) => createHash('sha256').update(k).digest('hex').slice(0, 12))
    .sort() ?? [];

describe('encrypted lab (IPsec between gateways) @vm-6.1-only', function () {
  requireRoot(this);
  this.timeout(600_000);
  let up = false;

  before(function (this: Mocha.Context) {
    if (labNamespaces().length > 0) cannotRunHere(this, "a lab is up (namespaces sl-*): left alone; 'strait-lab down' first");
  });
  afterEach(function (this: Mocha.Context) {
    if (this.currentTest?.state === 'failed') process.stdout.write(`lab output:\n${lines.slice(-60).join('\n')}\n`);
    lines.length = 0;
  });
  after(async () => {
    if (up) await labDown(runDir, say);
  });

  it('refuses the topology up front on a kernel without ESP, building nothing @no-esp', async function (this: Mocha.Context) {
    await requireKernel(this, { lacks: ['esp'] });
    await assert.rejects(
      labUp(topologyPath, { runDir, dataplane: 'auto', say }),
      (err: unknown) => err instanceof StateError && /encrypted peerings and this kernel cannot run them: it lacks .*esp/.test(err.message),
    );
    assert.deepEqual(labNamespaces(), [], 'nothing was built');
  });

  it('carries every check with only ESP between the encrypted gateways, and no secret reaches a log @esp', async function (this: Mocha.Context) {
    await requireKernel(this, { has: [...encryptionRequirements] });
    up = true;
    await labUp(topologyPath, { runDir, dataplane: 'auto', say, ...emulatedLab });
    const outcome = await labTest(runDir, say, emulatedPace);
    assert.equal(outcome.failed, 0, failureSummary(outcome));
    const [ab, bc] = outcome.wire;
    assert.ok(ab!.encrypted && ab!.esp > 0 && ab!.clear === 0, `A-B on the wire: ${ab!.esp} ESP, ${ab!.clear} others`);
    assert.ok(!bc!.encrypted && bc!.clear > 0 && bc!.esp === 0, `B-C on the wire: ${bc!.esp} ESP, ${bc!.clear} others`);
    process.stdout.write(`      wire: A-B ${ab!.esp} ESP packets and ${ab!.clear} others; B-C ${bc!.clear} VXLAN and ${bc!.esp} ESP\n`);
    for (const cluster of ['cluster-a', 'cluster-b']) {
      const counts = saPackets(gatewayOf(runDir, cluster));
      assert.equal(counts.length, 2, `${cluster}'s gateway has one SA each way`);
      assert.ok(
        counts.every((n) => n > 0),
        `${cluster}'s SAs carried traffic both ways: ${counts.join(', ')}`,
      );
    }

    // No secret, and no key derived from it, in any log of any process of the lab.
    const secret = readFileSync(join(secretsDir(runDir, 'cluster-a'), 'cluster-b'), 'utf8');
    const keys = derivePeeringKeys(peeringSecret('secret', secret), 'cluster-a', 'cluster-b');
    const forbidden = [
      secret,
      Buffer.from(secret, 'base64').toString('hex'),
      keys.forward.key.reveal().toString('hex'),
      keys.reverse.key.reveal().toString('hex'),
    ];
    const logs = readdirSync(join(runDir, 'logs'))
      .map((f) => readFileSync(join(runDir, 'logs', f), 'utf8'))
      .join('\n')
      .toLowerCase();
    for (const text of forbidden) assert.ok(!logs.includes(text.toLowerCase()), 'a secret or key reached a log');
    // Nor any process's argv, a supervisor's or its child's (every user of the machine can read it), nor a
    // document of the run directory besides the secrets' own files (node specs, exchanged NetworkConfigs,
    // heartbeats, statuses).
    const argv = knownProcesses(runDir)
      .flatMap((name) => [processPid(runDir, name), childPid(runDir, name)])
      .map((pid) => (pid !== undefined && existsSync(`/proc/${pid}`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : ''))
      .join('\n');
    const documents = (readdirSync(runDir, { recursive: true, withFileTypes: true }) as Dirent[])
      .filter(
        (e) =>
          e.isFile() &&
          !e.parentPath.startsWith(join(runDir, 'logs')) &&
          !savedTopology(runDir).clusters.some((c) => e.parentPath.startsWith(secretsDir(runDir, c.id))),
      )
      .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'));
    assert.ok(documents.length > 10, `the run directory's documents were read (${documents.length})`);
    for (const text of forbidden) {
      assert.ok(!argv.toLowerCase().includes(text.toLowerCase()), 'a secret or key reached a process argv');
      assert.ok(
        !documents.some((d) => d.toLowerCase().includes(text.toLowerCase())),
        'a secret or key reached a document of the run directory',
      );
    }
  });

  it('takes a changed secret at the next reconcile: A-B stops, and only it, while the sides differ, and heals when it is put back @esp', async function (this: Mocha.Context) {
    assert.ok(up, 'needs the lab the test above brought up');
    const topology = savedTopology(runDir);
    const views = await clusterViews(topology, runDir);
    const toB = addressSeenFrom(topology, views, 'cluster-a', 'cluster-b', '10.0.1.10'); // b-w1-p as A sees it
    const toC = addressSeenFrom(topology, views, 'cluster-b', 'cluster-c', '172.20.1.10'); // c-w1-p as B sees it
    assert.equal(await pings('a-w1-p', toB, 3), 3, 'A reaches B before');
    const bGateway = gatewayOf(runDir, 'cluster-b');
    const keysBefore = stateKeys(bGateway);
    assert.equal(keysBefore.length, 2, "B's gateway holds one ESP state each way");

    // Docs: the secret is read at every reconcile, so the reconcile after the change uses it.
    const bHoldsA = join(secretsDir(runDir, 'cluster-b'), 'cluster-a');
    const right = readFileSync(bHoldsA, 'utf8');
    const changed = Date.now();
    writeSecret(bHoldsA, randomBytes(32).toString('base64'));
    await nextReconcile('cluster-b', bGateway, changed);
    const keysChanged = stateKeys(bGateway);
    assert.equal(keysChanged.length, 2);
    assert.ok(
      keysChanged.every((k) => !keysBefore.includes(k)),
      "B's ESP states carry keys from the new secret after one reconcile",
    );
    assert.equal(await pings('a-w1-p', toB, 5), 0, 'no packet crosses A-B with mismatched keys');
    assert.equal(await pings('b-w1-p', toC, 3), 3, 'B-C is unaffected');

    const restored = Date.now();
    writeSecret(bHoldsA, right);
    await nextReconcile('cluster-b', bGateway, restored);
    assert.deepEqual(stateKeys(bGateway), keysBefore, 'the old keys are back after one reconcile');
    assert.equal(await pings('a-w1-p', toB, 3), 3, 'A-B heals once both sides hold the same secret again');
  });
});
