/**
 * A lab across machines (lab/src/machine.ts), with network namespaces for machines: each is entered
 * with nsenter (its network only, as a separate machine would be) and runs `strait-lab up|test|down
 * --node` itself; their NICs carry the plan's MACs and sit on a bridge per plan network, as the VMs'
 * NICs do (`npm run test:multivm` runs the same commands on real VMs). The run directory is shared.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { type MachinePlan, machinePlan } from '../../lab/src/machine-plan';
import { defaultTopologyPath } from '../../lab/src/names';
import { loadTopology } from '../../lab/src/topology';
import { requireRoot } from '../support/kernel';
import { labSuiteHooks } from '../support/lab-suite';

const runDir = `/run/strait/lab-machines-${process.pid}`;
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const topologyPath = join(defaultTopologyPath, '..', 'two-clusters.yaml');
const cli = join(__dirname, '..', '..', 'lab', 'src', 'main.js');
const machineNetns = (node: string) => `smt-${process.pid}-${node}`;
const switchNetns = `smt-${process.pid}-sw`;

/** Runs the CLI on a machine: its exit code and output (never rejects; 5 minutes at most). */
function onMachine(node: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      'nsenter',
      [`--net=/run/netns/${machineNetns(node)}`, process.execPath, cli, '--run-dir', runDir, ...args],
      { timeout: 300_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        const out = `${stdout}${stderr}`;
        say(`[${node}] lab ${args.join(' ')}: exit ${code}\n${out}`);
        resolve({ code, out });
      },
    );
  });
}

const onEvery = (plan: MachinePlan, args: (node: string) => string[]) =>
  Promise.all(plan.machines.map((m) => onMachine(m.name, args(m.name))));

/** The machines and their NICs: a namespace each, a veth per NIC with the plan's MAC, its peer on the network's bridge. */
function buildMachines(plan: MachinePlan): void {
  createNetns(switchNetns);
  plan.networks.forEach((_, i) => run(['ip', '-n', switchNetns, 'link', 'add', `br${i}`, 'up', 'type', 'bridge']));
  plan.machines.forEach((m, mi) => {
    createNetns(machineNetns(m.name));
    m.nics.forEach((nic, ni) => {
      // Named as a VM's NICs would be, so that `lab up --node` has to find them by MAC.
      run([
        'ip',
        'link',
        'add',
        `eth${ni}`,
        'netns',
        machineNetns(m.name),
        'address',
        nic.mac,
        'type',
        'veth',
        'peer',
        'name',
        `m${mi}n${ni}`,
        'netns',
        switchNetns,
      ]);
      run([
        'ip',
        '-n',
        switchNetns,
        'link',
        'set',
        `m${mi}n${ni}`,
        'master',
        `br${plan.networks.findIndex((n) => n.name === nic.network)}`,
        'up',
      ]);
    });
  });
}

/** What a machine holds besides its NICs once its node is down: must be nothing of Strait's. */
function machineState(node: string) {
  const inside = (argv: string[]) => run(['ip', 'netns', 'exec', machineNetns(node), ...argv]).trim();
  return {
    links: inside(['ip', '-br', 'link'])
      .split('\n')
      .map((l) => l.split(/\s+/)[0]!.split('@')[0])
      .sort(),
    routes: inside(['ip', 'route']),
    rules: inside(['ip', 'rule']),
    qdiscs: inside(['tc', 'qdisc', 'show'])
      .split('\n')
      .filter((l) => !l.startsWith('qdisc noqueue')),
    nft: inside(['nft', 'list', 'ruleset']),
  };
}

const labNamespacesNow = () =>
  run(['ip', 'netns', 'list'])
    .split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter((n) => n.startsWith('sl-'));

describe('lab across machines (real kernel, machines as network namespaces sharing a run directory)', function () {
  requireRoot(this);
  this.timeout(600_000);
  const plan = machinePlan(loadTopology(topologyPath));

  before(() => buildMachines(plan));
  // Registered before the lab suite's hooks, so it runs first: a failed test's machines are taken down.
  afterEach(async () => {
    await onEvery(plan, (node) => ['down', '--node', node]);
  });
  after(() => {
    for (const m of plan.machines) deleteNetns(machineNetns(m.name));
    deleteNetns(switchNetns);
  });
  labSuiteHooks(runDir, lines, say);

  it('refuses to be a node whose NICs the machine does not have, naming the MAC, and writes nothing', async () => {
    const before = machineState('a-gw');
    const r = await onMachine('a-gw', ['up', '--node', 'b-gw', '--topology', topologyPath]);
    assert.equal(r.code, 1);
    assert.match(
      r.out,
      /no interface of this machine has the MAC 52:54:00:5a:03:00 that the plan gives ul0 \(network underlay-cluster-b\)/,
    );
    assert.deepEqual(machineState('a-gw'), before);
    assert.equal(existsSync(join(runDir, 'topology.json')), false);
    assert.equal(existsSync(join(runDir, 'machines')), false);
  });

  it('refuses an encrypted peering on a kernel without ESP before changing anything @no-esp', async () => {
    const encrypted = join(defaultTopologyPath, '..', 'two-clusters-encrypted.yaml');
    const before = machineState('a-gw');
    const r = await onMachine('a-gw', ['up', '--node', 'a-gw', '--topology', encrypted]);
    assert.equal(r.code, 1);
    assert.match(r.out, /cluster-a has encrypted peerings and this machine's kernel cannot run them: it lacks esp/);
    assert.deepEqual(machineState('a-gw'), before);
    assert.equal(existsSync(join(runDir, 'topology.json')), false);
  });

  for (const dataplane of ['ebpf', 'kernel']) {
    it(`${dataplane}: two clusters with the same PodCIDR on three machines pass every check, reported in one table; down leaves each machine as it found it`, async () => {
      const up = await onEvery(plan, (node) => ['up', '--node', node, '--topology', topologyPath, '--dataplane', dataplane]);
      assert.deepEqual(
        up.map((r) => r.code),
        [0, 0, 0],
        lines.join('\n'),
      );
      assert.match(
        up[0]!.out,
        /a-gw: NICs ul0 192\.168\.1\.1\/24, pub0 203\.0\.113\.11\/24; 1 pods\na-gw: controller of cluster-a started/,
      );
      assert.doesNotMatch(up[1]!.out, /controller/, "a-w1 is not its cluster's first node");

      const again = await onMachine('a-w1', ['up', '--node', 'a-w1', '--topology', topologyPath]);
      assert.equal(again.code, 1);
      assert.match(again.out, /a-w1 is already up on this machine/);

      const early = await onMachine('a-gw', ['report']);
      assert.equal(early.code, 1, 'a report before any machine tested fails');
      assert.match(
        early.out,
        /FAIL a-gw: no results \(run 'strait-lab test --node a-gw' on it\)\nFAIL a-w1: no results .*\nFAIL b-gw: no results .*\n\n0 passed, 3 failed/,
      );

      const tested = await onEvery(plan, (node) => ['test', '--node', node]);
      assert.deepEqual(
        tested.map((r) => r.code),
        [0, 0, 0],
        lines.join('\n'),
      );
      const report = await onMachine('b-gw', ['report']);
      assert.equal(report.code, 0, report.out);
      const rows = report.out
        .split('\n')
        .filter((l) => /^(peered|intra) /.test(l))
        .map((l) => l.split(/\s+/).slice(0, 4).join(' '));
      // Known answer: B sees A's 10.0.0.0/16 remapped to 10.1.0.0/16 and A sees B's the same way; intra rows dial the pod's own address.
      assert.deepEqual(rows, [
        'peered a-gw-p b-gw-p 10.1.0.10',
        'intra a-gw-p a-w1-p 10.0.1.10',
        'peered a-w1-p b-gw-p 10.1.0.10',
        'intra a-w1-p a-gw-p 10.0.0.10',
        'peered b-gw-p a-gw-p 10.1.0.10',
        'peered b-gw-p a-w1-p 10.1.1.10',
      ]);
      assert.equal(
        report.out.split('\n').filter((l) => l.startsWith(`metrics ok   `) && l.includes(`: ${dataplane}`)).length,
        3,
        report.out,
      );
      assert.match(report.out, /\n37 passed, 0 failed\n/);

      const down = await onEvery(plan, (node) => ['down', '--node', node]);
      assert.deepEqual(
        down.map((r) => r.code),
        [0, 0, 0],
        lines.join('\n'),
      );
      for (const m of plan.machines) {
        const [ul0, pub0] = m.nics;
        assert.deepEqual(
          machineState(m.name),
          {
            links: ['lo', 'pub0', 'ul0'],
            routes: `${ul0.address.replace(/\.\d+\//, '.0/')} dev ul0 proto kernel scope link src ${ul0.address.split('/')[0]} \n${pub0.address.replace(/\.\d+\//, '.0/')} dev pub0 proto kernel scope link src ${pub0.address.split('/')[0]}`,
            rules: '0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default',
            qdiscs: [],
            nft: '',
          },
          `${m.name} after down`,
        );
      }
      assert.deepEqual(labNamespacesNow(), []);
      assert.equal(existsSync(join(runDir, 'machines')), true);
      assert.deepEqual(run(['ls', join(runDir, 'machines')]).trim(), '', 'each machine removed its own files');
    });
  }
});
