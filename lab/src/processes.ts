/**
 * The lab's long-running processes (controllers, agents, echo servers, etcds, API servers): started
 * detached with their logs and pid files in the run directory, so `lab down` finds them also after the
 * shell that started them is gone.
 *
 * The product's processes, agents and controllers, run supervised (startSupervised): `<name>.pid` is
 * their supervisor (supervise.ts), which restarts a child that crashed as a kubelet would, and
 * `<name>.child.pid` the child it runs (or ran last). A test crashes such a process by killing its child
 * (childPid); `stopProcess` is a deliberate stop, never followed by a restart. The lab's own processes
 * (echo servers, etcds, API servers) run unsupervised: they are the test bed, not what is tested, and a
 * test that wants one back starts it again itself (restartApiServer).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, closeSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runDirPaths } from '../../src/api/run-dir';
import { writeFileAtomic } from '../../src/store/atomic-file';
import { openRegularFileForAppend } from '../../src/store/regular-file';
import { type RestartPolicy, defaultRestartPolicy } from './restart-backoff';

const pidsDir = (runDir: string) => join(runDir, runDirPaths.pids);
export const logsDir = (runDir: string) => join(runDir, runDirPaths.logs);
const pidFile = (runDir: string, name: string) => join(pidsDir(runDir), `${name}.pid`);
const childSuffix = '.child.pid';
const childPidFile = (runDir: string, name: string) => join(pidsDir(runDir), `${name}${childSuffix}`);
const restartPolicyFile = (runDir: string) => join(runDir, runDirPaths.restartPolicy);
const supervisor = join(__dirname, 'supervise.js');

/** Starts `argv` detached, leading a process group of its own; its output goes to logs/<name>.log. */
function startDetached(runDir: string, name: string, argv: string[]): number {
  mkdirSync(pidsDir(runDir), { recursive: true });
  mkdirSync(logsDir(runDir), { recursive: true });
  const log = openRegularFileForAppend(join(logsDir(runDir), `${name}.log`), 0o644);
  const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  child.unref();
  if (child.pid === undefined) throw new Error(`cannot start ${name}: ${argv.join(' ')}`);
  writeFileAtomic(pidFile(runDir, name), `${child.pid}\n`);
  return child.pid;
}

const inNetns = (command: string[], netns?: string) => (netns ? ['ip', 'netns', 'exec', netns, ...command] : command);

/** Starts `command` detached and unsupervised (in `netns` when given); its output goes to logs/<name>.log. */
export function startProcess(runDir: string, name: string, command: string[], netns?: string): number {
  return startDetached(runDir, name, inNetns(command, netns));
}

/**
 * Starts `command` (in `netns` when given) under a supervisor that restarts it after a crash, by the
 * restart policy of `runDir` (writeRestartPolicy; the default without one); both write to
 * logs/<name>.log. Returns the supervisor's pid (`<name>.pid`).
 */
export function startSupervised(runDir: string, name: string, command: string[], netns?: string): number {
  const { firstDelayMs, maxDelayMs } = readRestartPolicy(runDir);
  return startDetached(runDir, name, [
    process.execPath,
    supervisor,
    '--name',
    name,
    '--child-pid-file',
    childPidFile(runDir, name),
    '--restart-delay-ms',
    String(firstDelayMs),
    '--restart-delay-max-ms',
    String(maxDelayMs),
    '--',
    ...inNetns(command, netns),
  ]);
}

/** The restart policy of the processes `startSupervised` starts in `runDir` from now on (`lab up` writes it). */
export function writeRestartPolicy(runDir: string, policy: RestartPolicy): void {
  mkdirSync(runDir, { recursive: true });
  writeFileAtomic(restartPolicyFile(runDir), `${JSON.stringify(policy)}\n`);
}

function readRestartPolicy(runDir: string): RestartPolicy {
  if (!existsSync(restartPolicyFile(runDir))) return defaultRestartPolicy;
  return JSON.parse(readFileSync(restartPolicyFile(runDir), 'utf8')) as RestartPolicy;
}

/**
 * Whether the process runs: it exists and is not a zombie (a lab process whose parent died is reaped by
 * init whenever init gets to it; until then signal 0 still reaches it).
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ...", comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

function readPid(path: string): number | undefined {
  try {
    return Number(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The pid of a lab process as `stopProcess` and `lab down` see it: a supervised process's supervisor. */
export const processPid = (runDir: string, name: string): number | undefined => readPid(pidFile(runDir, name));

/**
 * The pid of the child a supervised process's supervisor runs, or ran last (it is rewritten at each
 * restart); undefined for an unsupervised process, or before the supervisor started its child. SIGKILL
 * to it is a crash, which the supervisor answers with a restart.
 */
export const childPid = (runDir: string, name: string): number | undefined => readPid(childPidFile(runDir, name));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends `signal` to a process, or with a negative pid to a process group; whether it was there. */
function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/**
 * A deliberate stop: SIGTERM (a supervisor forwards it to its child, waits for it and exits without
 * restarting it), then after `graceMs` SIGKILL to the process's group (0: at once, as when its machine
 * dies): the supervisor, its child and whatever they started, together, so no child is left running or
 * restarted. Removes the pid files; resolves once none of them runs. Returns whether it was running.
 */
export async function stopProcess(runDir: string, name: string, graceMs = 3000): Promise<boolean> {
  const pid = processPid(runDir, name);
  const child = childPid(runDir, name);
  rmSync(pidFile(runDir, name), { force: true });
  rmSync(childPidFile(runDir, name), { force: true });
  const running = () => [pid, child].some((p) => p !== undefined && isAlive(p));
  if (pid === undefined || !running()) return false;
  if (graceMs > 0) {
    // A supervisor that died on its own (it never should) left its child: that one gets the SIGTERM.
    signal(isAlive(pid) ? pid : child!, 'SIGTERM');
    for (let waited = 0; waited < graceMs && running(); waited += 50) await sleep(50);
  }
  // Its process group outlives its leader while any member runs (a pid is not reused while it names a group).
  signal(-pid, 'SIGKILL');
  // Until every member is gone (signal 0 to the group fails), not only the two we know: what the child
  // started dies a moment after them.
  for (let waited = 0; waited < 1000 && (running() || signal(-pid, 0)); waited += 10) await sleep(10);
  return true;
}

/** Every process with a pid file (a supervised one once: its supervisor's). */
export function knownProcesses(runDir: string): string[] {
  try {
    return readdirSync(pidsDir(runDir))
      .filter((f) => f.endsWith('.pid') && !f.endsWith(childSuffix))
      .map((f) => f.slice(0, -4));
  } catch {
    return [];
  }
}
