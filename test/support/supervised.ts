/**
 * Crashing a supervised lab process (an agent, a controller: lab/src/supervise.ts) and reading what its
 * supervisor did about it. A crash is a SIGKILL of the child; `stopProcess` is a deliberate stop.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { childPid, isAlive, logsDir } from '../../lab/src/processes';
import { waitFor } from './wait';

/** A supervisor's line for a restart, as it logs it. */
export interface RestartLine {
  msg: string;
  name: string;
  exitCode?: number | null;
  signal?: string;
  error?: string;
  ranMs: number;
  delayMs: number;
  restarts: number;
}

/** The restart lines in a lab process's log, oldest first. */
export function restartLines(runDir: string, name: string): RestartLine[] {
  let text: string;
  try {
    text = readFileSync(join(logsDir(runDir), `${name}.log`), 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').flatMap((line) => {
    try {
      const parsed = JSON.parse(line) as RestartLine;
      return parsed.msg?.startsWith('restarting after') ? [parsed] : [];
    } catch {
      return [];
    }
  });
}

/** Resolves with the pid of the child a supervised process runs once there is one and it runs. */
export async function runningChild(runDir: string, name: string, timeoutMs = 10_000): Promise<number> {
  await waitFor(`${name}'s child to run`, () => isAlive(childPid(runDir, name) ?? 0), timeoutMs);
  return childPid(runDir, name)!;
}

/**
 * SIGKILLs the child of a supervised process (a crash) and resolves once its supervisor has started
 * another: both pids and the ms from the kill to the new child's pid file (at least the delay its
 * supervisor waited: it is written after the new child started).
 */
export async function crashChild(
  runDir: string,
  name: string,
  timeoutMs = 30_000,
): Promise<{ crashed: number; restarted: number; downMs: number }> {
  const crashed = await runningChild(runDir, name);
  const killed = Date.now();
  process.kill(crashed, 'SIGKILL');
  await waitFor(
    `${name} restarted after its crash`,
    () => {
      const now = childPid(runDir, name);
      return now !== undefined && now !== crashed && isAlive(now);
    },
    timeoutMs,
    () => readFileSync(join(logsDir(runDir), `${name}.log`), 'utf8').slice(-2000),
    10,
  );
  return { crashed, restarted: childPid(runDir, name)!, downMs: Date.now() - killed };
}
