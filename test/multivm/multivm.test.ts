/**
 * The multi-VM lab (issue 17) on local qemu VMs (machines.ts): the two-clusters topology, whose clusters
 * share the PodCIDR 10.0.0.0/16, one VM per node (three), provisioned by the same scripts as a Vagrant
 * machine (vagrant/provision/install.sh, lab.sh), brought up, checked across the VMs and torn down on the
 * eBPF dataplane and then on the kernel fallback with the peering encrypted (IPsec: VXLAN, policy routing
 * and nftables as on the plain fallback, with ESP between the gateways). `npm run test:multivm` (not
 * `npm test`: @multivm). The figures across VMs, on all three runs, are `npm run bench -- multivm`.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireRoot } from '../support/kernel';
import { saPacketCounts } from '../support/xfrm-state';
import { qemuProcessesOf } from './machines';
import { type LabRun, type MultiVmLab, bootMultiVmLab, labCli, labRuns, minutes } from './lab-runs';

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

/** The report's rows (kind, from, to) this topology must give, each with every cell passed. */
const expectedRows = [
  'peered a-gw-p -> b-gw-p',
  'peered a-w1-p -> b-gw-p',
  'peered b-gw-p -> a-gw-p',
  'peered b-gw-p -> a-w1-p',
  'intra a-gw-p -> a-w1-p',
  'intra a-w1-p -> a-gw-p',
];

describe('the multi-VM lab on local VMs @multivm', function () {
  requireRoot(this);
  let lab: MultiVmLab | undefined;
  const phases: string[] = [];
  const timed = async <T>(phase: string, action: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    const result = await action();
    phases.push(`${phase.padEnd(16)} ${seconds(Date.now() - started)}`);
    return result;
  };

  /**
   * The peering ran over ESP: each cluster's gateway holds one state each way and both carried traffic;
   * and no secret reached a log of any machine.
   */
  async function assertEncrypted(runDir: string): Promise<void> {
    for (const cluster of ['cluster-a', 'cluster-b']) {
      const { gateway } = JSON.parse(readFileSync(join(runDir, cluster, 'controller.json'), 'utf8')) as { gateway: string };
      const { code, output } = await lab!.machines.exec(gateway, 'ip -s xfrm state', 30_000);
      assert.equal(code, 0, output);
      const counts = saPacketCounts(output);
      assert.equal(
        counts.length,
        2,
        `${cluster}'s gateway ${gateway} has one ESP state each way:\n${output.replace(/0x[0-9a-f]+/g, '(key)')}`,
      );
      assert.ok(
        counts.every((n) => n > 0),
        `${cluster}'s states carried traffic both ways: ${counts.join(', ')}`,
      );
    }
    const secret = readFileSync(join(runDir, 'secrets', 'cluster-a', 'cluster-b'), 'utf8');
    assert.equal(readFileSync(join(runDir, 'secrets', 'cluster-b', 'cluster-a'), 'utf8'), secret, 'both clusters hold the same secret');
    for (const machine of lab!.plan.machines.map((m) => m.name)) {
      const dir = join(runDir, 'machines', machine, 'logs');
      for (const f of readdirSync(dir)) {
        const log = readFileSync(join(dir, f), 'utf8').toLowerCase();
        for (const form of [secret, Buffer.from(secret, 'base64').toString('hex')])
          assert.ok(!log.includes(form.toLowerCase()), `the secret reached ${machine}'s ${f}`);
      }
    }
  }

  before(async function () {
    this.timeout(minutes(5));
    lab = await bootMultiVmLab(timed);
  });

  after(function () {
    this.timeout(minutes(1));
    process.stdout.write(`      phases (wall time):\n${phases.map((p) => `        ${p}\n`).join('')}`);
    if (!lab) return;
    const { netns } = lab.machines;
    lab.stop();
    assert.deepEqual(qemuProcessesOf(netns), [], 'qemu processes left');
    const namespaces = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    assert.ok(!namespaces.split('\n').some((l) => l.split(' ')[0] === netns), `${netns} left:\n${namespaces}`);
  });

  for (const run of [labRuns.ebpf, labRuns.ipsec] satisfies LabRun[]) {
    it(`brings up two clusters with one PodCIDR on three VMs, passes every check across them and leaves nothing, on ${run.name} @multivm`, async function () {
      this.timeout(minutes(12));
      const runDir = lab!.runDir(run);
      let down = false;
      try {
        await timed(`${run.name} up`, () => lab!.onEvery(lab!.labScript(run, 'up'), minutes(5), run));
        await timed(`${run.name} test`, () => lab!.onEvery(lab!.labScript(run, 'test'), minutes(6), run));

        const report = spawnSync('node', [labCli, '--run-dir', runDir, 'report'], { encoding: 'utf8' });
        const text = `${report.stdout}${report.stderr}`;
        process.stdout.write(`${text.replace(/^/gm, '        ')}\n`);
        assert.equal(report.status, 0, `lab report exited ${report.status}:\n${text}`);
        const rows = text
          .split('\n')
          .map((l) => l.trim().split(/\s+/))
          .filter((c) => ['peered', 'intra', 'hub', 'not-peered'].includes(c[0]!));
        assert.deepEqual(rows.map(([kind, from, to]) => `${kind} ${from} -> ${to}`).sort(), [...expectedRows].sort());
        // PING TCP UDP FRAG UNREACH on every row; PMTU-TCP PMTU-ICMP on one peered row each way, between
        // b-gw-p and the same pod of cluster-a (which one follows cluster-a's elected gateway).
        for (const row of rows) assert.deepEqual(row.slice(4, 9), ['ok', 'ok', 'ok', 'ok', 'ok'], row.join(' '));
        const pathMtu = rows.filter((r) => r[9] !== '-' || r[10] !== '-').map((r) => `${r[0]} ${r[1]} -> ${r[2]}: ${r[9]} ${r[10]}`);
        const podA = rows.find((r) => r[1] === 'b-gw-p' && r[9] !== '-')?.[2] ?? 'none';
        assert.deepEqual(pathMtu.sort(), [`peered ${podA} -> b-gw-p: ok ok`, `peered b-gw-p -> ${podA}: ok ok`].sort());
        assert.ok(['a-gw-p', 'a-w1-p'].includes(podA), pathMtu.join('\n'));
        assert.match(text, /\b0 failed\b/);
        if (run === labRuns.ipsec) await assertEncrypted(runDir);

        await timed(`${run.name} down`, () => lab!.onEvery(lab!.labScript(run, 'down'), minutes(3), run));
        down = true;
        // Nothing of the lab in any VM: pod namespaces, pins, tunnels, Strait's links (the NICs stay).
        const left = await lab!.onEvery(
          (machine) =>
            [
              'ip netns list 2>/dev/null | grep "^sl-"',
              `ls -d /sys/fs/bpf/strait-lab/${machine} 2>/dev/null`,
              'ip -o link show type vxlan',
              'ip -o link | grep -i strait',
              'true',
            ].join('\n'),
          minutes(1),
          run,
        );
        assert.deepEqual(left, { 'a-gw': '', 'a-w1': '', 'b-gw': '' });
      } finally {
        // A failed run still tears down, so that the next run starts on clean machines.
        if (!down)
          await Promise.all(
            lab!.plan.machines.map(({ name }) =>
              lab!.machines.exec(name, lab!.labScript(run, 'down')(name), minutes(3)).catch(() => undefined),
            ),
          );
      }
    });
  }
});
