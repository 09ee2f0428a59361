/**
 * The lab's long-running processes (controllers, agents, echo servers): started detached with their
 * logs and pid files in the run directory, so `lab down` finds them also after the shell that started
 * them is gone.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, closeSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runDirPaths } from '../../src/api/run-dir';
import { writeFileAtomic } from '../../src/store/atomic-file';
import { openRegularFileForAppend } from '../../src/store/regular-file';

const pidsDir = (runDir: string) => join(runDir, runDirPaths.pids);
export const logsDir = (runDir: string) => join(runDir, runDirPaths.logs);

/** Starts `command` detached (in `netns` when given); its output goes to logs/<name>.log. */
export function startProcess(runDir: string, name: string, command: string[], netns?: string): number {
  mkdirSync(pidsDir(runDir), { recursive: true });
  mkdirSync(logsDir(runDir), { recursive: true });
  const log = openRegularFileForAppend(join(logsDir(runDir), `${name}.log`), 0o644);
  const argv = netns ? ['ip', 'netns', 'exec', netns, ...command] : command;
  const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  child.unref();
  if (child.pid === undefined) throw new Error(`cannot start ${name}: ${argv.join(' ')}`);
  writeFileAtomic(join(pidsDir(runDir), `${name}.pid`), `${child.pid}\n`);
  return child.pid;
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

export function processPid(runDir: string, name: string): number | undefined {
  try {
    return Number(readFileSync(join(pidsDir(runDir), `${name}.pid`), 'utf8'));
  } catch {
    return undefined;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * SIGTERM, then SIGKILL after `graceMs` (0: SIGKILL at once, as when its machine dies); removes the pid
 * file. Returns whether it was running.
 */
export async function stopProcess(runDir: string, name: string, graceMs = 3000): Promise<boolean> {
  const pid = processPid(runDir, name);
  rmSync(join(pidsDir(runDir), `${name}.pid`), { force: true });
  if (pid === undefined || !isAlive(pid)) return false;
  process.kill(pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
  for (let waited = 0; waited < graceMs && isAlive(pid); waited += 50) await sleep(50);
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  return true;
}

/** Every process with a pid file. */
export function knownProcesses(runDir: string): string[] {
  try {
    return readdirSync(pidsDir(runDir))
      .filter((f) => f.endsWith('.pid'))
      .map((f) => f.slice(0, -4));
  } catch {
    return [];
  }
}
