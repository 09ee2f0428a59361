/**
 * The multi-VM lab as both its test and its bench drive it: the three local VMs of the two-clusters
 * topology booted and provisioned, and a lab run (a dataplane, a topology) brought up and down in them by
 * the scripts a Vagrant machine runs (vagrant/provision/install.sh, lab.sh).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Machines, type Plan, startMachines } from './machines';

const repo = resolve(__dirname, '..', '..', '..');
export const labCli = join(repo, 'dist/lab/src/main.js');
const topology = join(repo, 'lab/src/topologies/two-clusters.yaml');

export interface LabRun {
  /** Also the run's directory under the shared run directory. */
  name: string;
  dataplane: 'ebpf' | 'kernel';
  topology: string;
}

/** eBPF; the kernel fallback (VXLAN); the fallback with the peering encrypted (IPsec: Debian's kernel has ESP). */
export const labRuns = {
  ebpf: { name: 'ebpf', dataplane: 'ebpf', topology },
  kernel: { name: 'kernel', dataplane: 'kernel', topology },
  ipsec: { name: 'ipsec', dataplane: 'kernel', topology: join(repo, 'lab/src/topologies/two-clusters-encrypted.yaml') },
} satisfies Record<string, LabRun>;

export const minutes = (n: number) => n * 60_000;

/** The VMs of one lab: booted, provisioned, and where their shared run directory is on this host. */
export interface MultiVmLab {
  plan: Plan;
  machines: Machines;
  hostRunDir: string;
  /** Runs a script in every machine at once; fails with the failing machines' output, console and the run's lab logs. */
  onEvery(script: (machine: string) => string, timeoutMs: number, run?: LabRun): Promise<Record<string, string>>;
  /** `lab.sh <verb>` of `run` on `machine`, as its shell script. */
  labScript(run: LabRun, verb: 'up' | 'test' | 'down'): (machine: string) => string;
  /** The run directory of `run` on this host. */
  runDir(run: LabRun): string;
  /** Stops the VMs and removes their directories. */
  stop(): void;
}

/** The last lines of every log file of a machine's lab processes (<runDir>/machines/<node>/logs/). */
function labLogsTail(runDir: string, machine: string): string {
  const dir = join(runDir, 'machines', machine, 'logs');
  if (!existsSync(dir)) return `(no ${dir})`;
  return readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .map((f) => `--- ${f}\n${readFileSync(join(dir, f), 'utf8').trimEnd().split('\n').slice(-15).join('\n')}`)
    .join('\n');
}

/**
 * Boots one VM per machine of the two-clusters plan and runs install.sh in each, which must find
 * everything in the image ("nothing to do": no network). `phase` times each step.
 */
export async function bootMultiVmLab(phase: <T>(name: string, action: () => Promise<T>) => Promise<T>): Promise<MultiVmLab> {
  const plan = JSON.parse(execFileSync('node', [labCli, 'plan', '--topology', topology], { encoding: 'utf8' })) as Plan;
  assert.deepEqual(
    plan.machines.map((m) => m.name),
    ['a-gw', 'a-w1', 'b-gw'],
  );
  // The run directory the VMs share, and beside it (not shared) their consoles.
  const workDir = mkdtempSync('/tmp/strait-mvm-test-');
  const hostRunDir = join(workDir, 'run');
  let machines: Machines;
  try {
    machines = startMachines(plan, { repo, runDir: hostRunDir, logDir: join(workDir, 'consoles') });
  } catch (err) {
    rmSync(workDir, { recursive: true, force: true });
    throw err;
  }
  const runDir = (run: LabRun) => join(hostRunDir, run.name); // /run/strait-mvm/<run> in the VMs
  const lab: MultiVmLab = {
    plan,
    machines,
    hostRunDir,
    runDir,
    async onEvery(script, timeoutMs, run) {
      const results = await Promise.all(
        plan.machines.map(async ({ name }) => ({ name, ...(await machines.exec(name, script(name), timeoutMs)) })),
      );
      const failed = results.filter((r) => r.code !== 0);
      assert.equal(
        failed.length,
        0,
        failed
          .map(
            (r) =>
              `${r.name}: exit ${r.code} of\n${script(r.name)}\n--- its output:\n${r.output}` +
              `\n--- its console:\n${machines.consoleTail(r.name)}${run ? `\n--- its lab logs:\n${labLogsTail(runDir(run), r.name)}` : ''}`,
          )
          .join('\n\n'),
      );
      return Object.fromEntries(results.map((r) => [r.name, r.output]));
    },
    labScript: (run, verb) => (machine) =>
      [
        `export STRAIT_NODE=${machine} STRAIT_TOPOLOGY=${run.topology} STRAIT_RUN_DIR=/run/strait-mvm/${run.name}`,
        `export STRAIT_DATAPLANE=${run.dataplane} STRAIT_PACE=emulated`,
        `bash vagrant/provision/lab.sh ${verb}`,
      ].join('\n'),
    stop() {
      try {
        machines.stop();
      } finally {
        rmSync(workDir, { recursive: true, force: true });
      }
    },
  };
  try {
    await phase('boot', () => lab.onEvery(() => 'true', minutes(3)));
    const installed = await phase('install', () => lab.onEvery(() => `bash vagrant/provision/install.sh ${repo}`, minutes(2)));
    for (const [name, output] of Object.entries(installed)) assert.match(output, /nothing to do/, `${name}: ${output}`);
  } catch (err) {
    lab.stop();
    throw err;
  }
  return lab;
}
