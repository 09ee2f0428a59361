/**
 * The multi-VM lab (issue 17) on local qemu VMs (machines.ts): the two-clusters topology, whose clusters
 * share the PodCIDR 10.0.0.0/16, one VM per node (three), provisioned by the same scripts as a Vagrant
 * machine (vagrant/provision/install.sh, lab.sh), brought up, checked across the VMs and torn down on the
 * eBPF dataplane and then on the kernel fallback. `npm run test:multivm` (not `npm test`: @multivm).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { requireRoot } from '../support/kernel';
import { buildCrr } from '../bench/e2e/traffic';
import { saPacketCounts } from '../support/xfrm-state';
import { crossVmFigures, figuresLine } from './figures';
import { type Machines, type Plan, qemuProcessesOf, startMachines } from './machines';

const repo = resolve(__dirname, '..', '..', '..');
const cli = join(repo, 'dist/src/cli/main.js');
const topology = join(repo, 'src/lab/topologies/two-clusters.yaml');

/**
 * The runs, each on the same three VMs after the one before was taken down: the eBPF datapath, the
 * kernel fallback (VXLAN), and the fallback with the peering encrypted (IPsec: Debian's kernel has ESP).
 */
const runs = [
  { name: 'ebpf', dataplane: 'ebpf', topology },
  { name: 'kernel', dataplane: 'kernel', topology },
  { name: 'ipsec', dataplane: 'kernel', topology: join(repo, 'src/lab/topologies/two-clusters-encrypted.yaml') },
];

const minutes = (n: number) => n * 60_000;
const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

/** The report's rows (kind, from, to) this topology must give, each with every cell passed. */
const expectedRows = [
  'peered a-gw-p -> b-gw-p', 'peered a-w1-p -> b-gw-p', 'peered b-gw-p -> a-gw-p', 'peered b-gw-p -> a-w1-p',
  'intra a-gw-p -> a-w1-p', 'intra a-w1-p -> a-gw-p',
];

/** The last lines of every log file of a machine's lab processes (<runDir>/machines/<node>/logs/). */
function labLogsTail(runDir: string, machine: string): string {
  const dir = join(runDir, 'machines', machine, 'logs');
  if (!existsSync(dir)) return `(no ${dir})`;
  return readdirSync(dir).filter((f) => f.endsWith('.log')).map((f) =>
    `--- ${f}\n${readFileSync(join(dir, f), 'utf8').trimEnd().split('\n').slice(-15).join('\n')}`).join('\n');
}

describe('the multi-VM lab on local VMs @multivm', function () {
  requireRoot(this);
  let plan: Plan;
  let machines: Machines | undefined;
  let workDir: string | undefined;
  let hostRunDir: string;
  const phases: string[] = [];
  const figures: string[] = [];
  const timed = async <T>(phase: string, action: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    const result = await action();
    phases.push(`${phase.padEnd(16)} ${seconds(Date.now() - started)}`);
    return result;
  };

  /** Runs a script in every machine at once; fails with the failing machines' output, console and lab logs. */
  async function onEvery(script: (machine: string) => string, timeoutMs: number, runDir = hostRunDir): Promise<Record<string, string>> {
    const results = await Promise.all(plan.machines.map(async ({ name }) => ({ name, ...await machines!.exec(name, script(name), timeoutMs) })));
    const failed = results.filter((r) => r.code !== 0);
    assert.equal(failed.length, 0, failed.map((r) => `${r.name}: exit ${r.code} of\n${script(r.name)}\n--- its output:\n${r.output}` +
      `\n--- its console:\n${machines!.consoleTail(r.name)}\n--- its lab logs:\n${labLogsTail(runDir, r.name)}`).join('\n\n'));
    return Object.fromEntries(results.map((r) => [r.name, r.output]));
  }

  /**
   * The peering ran over ESP: each cluster's gateway holds one state each way and both carried traffic;
   * and no secret reached a log of any machine.
   */
  async function assertEncrypted(runDir: string): Promise<void> {
    for (const cluster of ['cluster-a', 'cluster-b']) {
      const { gateway } = JSON.parse(readFileSync(join(runDir, cluster, 'controller.json'), 'utf8')) as { gateway: string };
      const { code, output } = await machines!.exec(gateway, 'ip -s xfrm state', 30_000);
      assert.equal(code, 0, output);
      const counts = saPacketCounts(output);
      assert.equal(counts.length, 2, `${cluster}'s gateway ${gateway} has one ESP state each way:\n${output.replace(/0x[0-9a-f]+/g, '(key)')}`);
      assert.ok(counts.every((n) => n > 0), `${cluster}'s states carried traffic both ways: ${counts.join(', ')}`);
    }
    const secret = readFileSync(join(runDir, 'secrets', 'cluster-a', 'cluster-b'), 'utf8');
    assert.equal(readFileSync(join(runDir, 'secrets', 'cluster-b', 'cluster-a'), 'utf8'), secret, 'both clusters hold the same secret');
    for (const machine of plan.machines.map((m) => m.name)) {
      const dir = join(runDir, 'machines', machine, 'logs');
      for (const f of readdirSync(dir)) {
        const log = readFileSync(join(dir, f), 'utf8').toLowerCase();
        for (const form of [secret, Buffer.from(secret, 'base64').toString('hex')]) assert.ok(!log.includes(form.toLowerCase()), `the secret reached ${machine}'s ${f}`);
      }
    }
  }

  before(async function () {
    this.timeout(minutes(5));
    buildCrr();
    plan = JSON.parse(execFileSync('node', [cli, 'lab', 'plan', '--topology', topology], { encoding: 'utf8' })) as Plan;
    assert.deepEqual(plan.machines.map((m) => m.name), ['a-gw', 'a-w1', 'b-gw']);
    // The run directory the VMs share, and beside it (not shared) their consoles.
    workDir = mkdtempSync('/tmp/strait-mvm-test-');
    hostRunDir = join(workDir, 'run');
    machines = startMachines(plan, { repo, runDir: hostRunDir, logDir: join(workDir, 'consoles') });
    await timed('boot', () => onEvery(() => 'true', minutes(3)));
    const installed = await timed('install', () => onEvery(() => `bash vagrant/provision/install.sh ${repo}`, minutes(2)));
    // The image has every package, node and bpffs: install.sh must find nothing to do (and no network).
    for (const [name, output] of Object.entries(installed)) assert.match(output, /nothing to do/, `${name}: ${output}`);
  });

  after(function () {
    this.timeout(minutes(1));
    process.stdout.write(`      phases (wall time):\n${phases.map((p) => `        ${p}\n`).join('')}`);
    process.stdout.write(`      across VMs (TCG: relative figures; ratios against the plain route in the same run):\n${figures.map((f) => `        ${f}\n`).join('')}`);
    try {
      if (machines) {
        machines.stop();
        assert.deepEqual(qemuProcessesOf(machines.netns), [], 'qemu processes left');
        const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
        assert.ok(!netns.split('\n').some((l) => l.split(' ')[0] === machines!.netns), `${machines.netns} left:\n${netns}`);
      }
    } finally {
      if (workDir) rmSync(workDir, { recursive: true, force: true });
    }
  });

  for (const { name: dataplane, dataplane: requested, topology } of runs) {
    it(`brings up two clusters with one PodCIDR on three VMs, passes every check across them and leaves nothing, on ${dataplane} @multivm`, async function () {
      this.timeout(minutes(12));
      const runDir = join(hostRunDir, dataplane); // /run/strait-mvm/<run> in the VMs
      const lab = (verb: string) => (machine: string) => [
        `export STRAIT_NODE=${machine} STRAIT_TOPOLOGY=${topology} STRAIT_RUN_DIR=/run/strait-mvm/${dataplane}`,
        `export STRAIT_DATAPLANE=${requested} STRAIT_PACE=emulated`,
        `bash vagrant/provision/lab.sh ${verb}`,
      ].join('\n');
      let down = false;
      try {
        await timed(`${dataplane} up`, () => onEvery(lab('up'), minutes(5), runDir));
        await timed(`${dataplane} test`, () => onEvery(lab('test'), minutes(6), runDir));

        const report = spawnSync('node', [cli, 'lab', '--run-dir', runDir, 'report'], { encoding: 'utf8' });
        const text = `${report.stdout}${report.stderr}`;
        process.stdout.write(`${text.replace(/^/gm, '        ')}\n`);
        assert.equal(report.status, 0, `lab report exited ${report.status}:\n${text}`);
        const rows = text.split('\n').map((l) => l.trim().split(/\s+/)).filter((c) => ['peered', 'intra', 'hub', 'not-peered'].includes(c[0]!));
        assert.deepEqual(rows.map(([kind, from, to]) => `${kind} ${from} -> ${to}`).sort(), [...expectedRows].sort());
        // PING TCP UDP FRAG UNREACH on every row; PMTU-TCP PMTU-ICMP on one peered row each way, between
        // b-gw-p and the same pod of cluster-a (which one follows cluster-a's elected gateway).
        for (const row of rows) assert.deepEqual(row.slice(4, 9), ['ok', 'ok', 'ok', 'ok', 'ok'], row.join(' '));
        const pathMtu = rows.filter((r) => r[9] !== '-' || r[10] !== '-').map((r) => `${r[0]} ${r[1]} -> ${r[2]}: ${r[9]} ${r[10]}`);
        const podA = rows.find((r) => r[1] === 'b-gw-p' && r[9] !== '-')?.[2] ?? 'none';
        assert.deepEqual(pathMtu.sort(), [`peered ${podA} -> b-gw-p: ok ok`, `peered b-gw-p -> ${podA}: ok ok`].sort());
        assert.ok(['a-gw-p', 'a-w1-p'].includes(podA), pathMtu.join('\n'));
        assert.match(text, /\b0 failed\b/);
        if (dataplane === 'ipsec') await assertEncrypted(runDir);

        // The e2e bench's figures that make sense across VMs (figures.ts), printed: measured, not asserted.
        const measured = await timed(`${dataplane} figures`, () => crossVmFigures((machine, script, timeoutMs) => machines!.exec(machine, script, timeoutMs)));
        figures.push(...measured.map((f) => `${dataplane.padEnd(6)} ${figuresLine(f, measured[0]!)}`));

        await timed(`${dataplane} down`, () => onEvery(lab('down'), minutes(3), runDir));
        down = true;
        // Nothing of the lab in any VM: pod namespaces, pins, tunnels, Strait's links (the NICs stay).
        const left = await onEvery((machine) => [
          'ip netns list 2>/dev/null | grep "^sl-"',
          `ls -d /sys/fs/bpf/strait-lab/${machine} 2>/dev/null`,
          'ip -o link show type vxlan',
          'ip -o link | grep -i strait',
          'true',
        ].join('\n'), minutes(1), runDir);
        assert.deepEqual(left, { 'a-gw': '', 'a-w1': '', 'b-gw': '' });
      } finally {
        // A failed run still tears down, so that the next dataplane starts on clean machines.
        if (!down) await Promise.all(plan.machines.map(({ name }) => machines!.exec(name, lab('down')(name), minutes(3)).catch(() => undefined)));
      }
    });
  }
});
