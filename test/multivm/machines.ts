/**
 * The local machines of the multi-VM lab (issue 17; vagrant/local/README.md): one qemu VM per machine of a
 * lab plan (`strait-lab plan`), booted from vagrant/local/boot-files.sh (an mmdebstrap root, Debian's
 * kernel), joined by a bridge per plan network inside a throw-away network namespace `smv-*` on this host,
 * where qemu runs with a tap per NIC (the plan's MAC). Each VM shares the repository (read-only, at the same
 * path) and the run directory (at /run/strait-mvm) with this host, and runs the scripts this side drops into
 * its control directory (vagrant/local/init.sh), one at a time, in order.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  closeSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { uniqueName } from '../support/kernel';

/** What this runner reads of the plan JSON (`strait-lab plan`, the spec's format). */
export interface Plan {
  mtu: number;
  networks: { name: string; cidr: string }[];
  machines: { name: string; nics: { network: string; mac: string }[] }[];
}

export interface MachinesOptions {
  /** The repository, built on this host: shared read-only at the same path. */
  repo: string;
  /** This host's directory the VMs share at /run/strait-mvm (read-write). */
  runDir: string;
  /** Where each VM's console goes, as <machine>.console.log (and qemu's own messages as <machine>.qemu.log). */
  logDir: string;
  /** Memory of each VM in MiB (default 1536). */
  memoryMiB?: number;
}

interface ExecResult {
  code: number;
  /** stdout and stderr, interleaved as written. */
  output: string;
}

export interface Machines {
  /** The host's network namespace holding the bridges, taps and qemu processes. */
  netns: string;
  /** Runs a bash script in the machine from the repository directory (after its boot); one at a time per machine. */
  exec(machine: string, script: string, timeoutMs: number): Promise<ExecResult>;
  /** The last lines of a machine's console. */
  consoleTail(machine: string, lines?: number): string;
  /** Kills every VM, deletes the namespace and the temp directory; idempotent, also run on exit, SIGINT and SIGTERM. */
  stop(): void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ipIn = (netns: string, ...args: string[]) => execFileSync('ip', ['-n', netns, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
/** Whether a process runs (a zombie does not: nothing reaps while stop() waits synchronously). */
function alive(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false; // gone, or reaped while we looked
  }
}

/** The qemu processes whose command line names this namespace (each runs with -name <netns>-<machine>). */
export function qemuProcessesOf(netns: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        return argv[0]?.endsWith('qemu-system-x86_64') === true && argv.some((a) => a.startsWith(`${netns}-`));
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

/** What vagrant/local/boot-files.sh made: the root directory, kernel, initramfs, modules, qemu's accelerator arguments. */
function bootFiles(repo: string, dir: string): Record<'root' | 'kernel' | 'initrd' | 'modules' | 'append' | 'accel', string> {
  const out = execFileSync('bash', [join(repo, 'vagrant/local/boot-files.sh'), dir], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const files = Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  for (const key of ['root', 'kernel', 'initrd', 'modules', 'append', 'accel']) {
    if (!files[key]) throw new Error(`boot-files.sh printed no ${key}:\n${out}`);
  }
  return files as Record<'root' | 'kernel' | 'initrd' | 'modules' | 'append' | 'accel', string>;
}

const fsdev = (id: string, path: string, readonly: boolean) => [
  '-fsdev',
  `local,id=${id},path=${path},security_model=none,multidevs=remap${readonly ? ',readonly=on' : ''}`,
  '-device',
  `virtio-9p-pci,fsdev=${id},mount_tag=${id}`,
];

/** Boots every machine of the plan at once; exec waits for a machine's boot. Call stop() when done. */
export function startMachines(plan: Plan, options: MachinesOptions): Machines {
  const netns = uniqueName('smv');
  const tmp = mkdtempSync('/tmp/strait-mvm-');
  const children = new Map<string, ChildProcess>();
  const queues = new Map<string, Promise<unknown>>();
  let nextId = 0;
  let stopped = false;

  const ctlDir = (machine: string) => join(tmp, machine, 'strait-vm');
  const consolePath = (machine: string) => join(options.logDir, `${machine}.console.log`);
  const consoleTail = (machine: string, lines = 40) => {
    try {
      return readFileSync(consolePath(machine), 'utf8').replace(/\r/g, '').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no console)';
    }
  };

  const onSignal = (signal: NodeJS.Signals) => {
    stop();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  function stop(): void {
    if (stopped) return;
    stopped = true;
    process.off('exit', stop).off('SIGINT', onSignal).off('SIGTERM', onSignal);
    // The guests keep nothing worth a clean power-off (a tmpfs root; the run directory is written with renames).
    const pids = [...qemuProcessesOf(netns), ...[...children.values()].map((c) => c.pid).filter((p): p is number => p !== undefined)];
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
    const until = Date.now() + 10_000;
    while (pids.some(alive) && Date.now() < until) execFileSync('sleep', ['0.1']);
    try {
      execFileSync('ip', ['netns', 'delete', netns], { stdio: 'ignore' }); // its bridges and taps with it
    } catch {
      /* not made yet */
    }
    rmSync(tmp, { recursive: true, force: true });
  }
  process.on('exit', stop).on('SIGINT', onSignal).on('SIGTERM', onSignal);

  try {
    mkdirSync(options.logDir, { recursive: true });
    mkdirSync(options.runDir, { recursive: true });
    const files = bootFiles(options.repo, tmp);
    execFileSync('ip', ['netns', 'add', netns]);
    ipIn(netns, 'link', 'set', 'lo', 'up');
    const bridges = new Map(plan.networks.map((n, i) => [n.name, `br${i}`]));
    for (const bridge of bridges.values()) {
      ipIn(netns, 'link', 'add', bridge, 'mtu', String(plan.mtu), 'type', 'bridge');
      ipIn(netns, 'link', 'set', bridge, 'up');
    }
    plan.machines.forEach((machine, m) => {
      const ctl = ctlDir(machine.name);
      mkdirSync(join(ctl, 'cmd'), { recursive: true });
      writeFileSync(join(ctl, 'hostname'), `${machine.name}\n`);
      writeFileSync(join(ctl, 'repo'), `${options.repo}\n`);
      const nicArgs = machine.nics.flatMap((nic, n) => {
        const tap = `t${m}n${n}`;
        const bridge = bridges.get(nic.network);
        if (!bridge) throw new Error(`machine ${machine.name}: NIC ${nic.mac} is on ${nic.network}, not a network of the plan`);
        // Made here (persistent) rather than by qemu, so that it is in its bridge before the guest sends anything.
        ipIn(netns, 'tuntap', 'add', 'dev', tap, 'mode', 'tap');
        ipIn(netns, 'link', 'set', tap, 'mtu', String(plan.mtu), 'master', bridge, 'up');
        return ['-netdev', `tap,id=n${n},ifname=${tap},script=no,downscript=no`, '-device', `virtio-net-pci,netdev=n${n},mac=${nic.mac}`];
      });
      const qemuLog = openSync(join(options.logDir, `${machine.name}.qemu.log`), 'w');
      // Under timeout: even a runner killed with SIGKILL (no exit handler) leaves its VMs for an hour at most.
      const child = spawn(
        'ip',
        [
          'netns',
          'exec',
          netns,
          'timeout',
          '-k',
          '10',
          '3600',
          'qemu-system-x86_64',
          ...files.accel.split(' '),
          '-name',
          `${netns}-${machine.name}`,
          '-m',
          String(options.memoryMiB ?? 1536),
          '-smp',
          '1',
          '-display',
          'none',
          '-vga',
          'none',
          '-nodefaults',
          '-bios',
          'qboot.rom',
          '-no-reboot',
          '-serial',
          `file:${consolePath(machine.name)}`,
          '-kernel',
          files.kernel,
          '-initrd',
          files.initrd,
          '-append',
          files.append,
          ...fsdev('hostroot', files.root, true),
          ...fsdev('modules', files.modules, true),
          ...fsdev('repo', options.repo, true),
          ...fsdev('rundir', options.runDir, false),
          ...fsdev('strait-vm', ctl, false),
          ...nicArgs,
        ],
        { stdio: ['ignore', qemuLog, qemuLog] },
      );
      closeSync(qemuLog);
      children.set(machine.name, child);
    });
  } catch (error) {
    stop();
    throw error;
  }

  async function run(machine: string, script: string, timeoutMs: number): Promise<ExecResult> {
    const child = children.get(machine);
    if (!child) throw new Error(`no machine ${machine}`);
    const ctl = ctlDir(machine);
    const deadline = Date.now() + timeoutMs;
    const dead = () =>
      (child.exitCode !== null || child.signalCode !== null) &&
      new Error(`machine ${machine}: qemu ended (${child.exitCode ?? child.signalCode}); its console:\n${consoleTail(machine)}`);
    while (!existsSync(join(ctl, 'ready'))) {
      const error =
        dead() ||
        (Date.now() > deadline && new Error(`machine ${machine} not up after ${timeoutMs} ms; its console:\n${consoleTail(machine)}`));
      if (error) throw error;
      await sleep(200);
    }
    const id = String(++nextId).padStart(6, '0');
    writeFileSync(join(ctl, 'cmd', `.${id}`), script);
    renameSync(join(ctl, 'cmd', `.${id}`), join(ctl, 'cmd', `${id}.sh`)); // the guest sees it whole
    const rc = join(ctl, 'out', `${id}.rc`);
    const output = () => {
      try {
        return readFileSync(join(ctl, 'out', `${id}.log`), 'utf8');
      } catch {
        return '';
      }
    };
    while (!existsSync(rc)) {
      const error =
        dead() ||
        (Date.now() > deadline &&
          new Error(`machine ${machine}: no exit code after ${timeoutMs} ms of:\n${script}\n--- its output so far:\n${output()}`));
      if (error) throw error;
      await sleep(200);
    }
    return { code: Number(readFileSync(rc, 'utf8').trim()), output: output() };
  }

  return {
    netns,
    exec(machine, script, timeoutMs) {
      if (stopped) return Promise.reject(new Error('the machines are stopped'));
      const result = (queues.get(machine) ?? Promise.resolve()).catch(() => undefined).then(() => run(machine, script, timeoutMs));
      queues.set(machine, result);
      return result;
    },
    consoleTail,
    stop,
  };
}
