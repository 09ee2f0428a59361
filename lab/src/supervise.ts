/**
 * The lab's kubelet for one of its processes (an agent, a controller): runs it as its child, and when the
 * child exits without being asked to (a crash, a kill, even an exit 0: restartPolicy Always), starts it
 * again after a delay that doubles with each crash in a row (restart-backoff.ts, the kubelet's
 * CrashLoopBackOff). Each restart is one pino-style JSON line on its stdout, the process's log file, which
 * the child inherits. SIGTERM or SIGINT: forwarded to the child, waited for, and the supervisor exits 0
 * without restarting anything (a deliberate stop: processes.ts, stopProcess).
 *
 * Started by processes.ts (startSupervised) detached, so it leads a process group of its own; the child
 * stays in that group, and a SIGKILL to the group (a machine that dies, a stop whose grace ran out) takes
 * both at once, never leaving a child running without its supervisor. The child's pid is rewritten
 * (atomically) to `--child-pid-file` at each start.
 *
 * Run as `node supervise.js --name NAME --child-pid-file FILE --restart-delay-ms MS --restart-delay-max-ms MS -- COMMAND...`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { writeFileAtomic } from '../../src/store/atomic-file';
import { type RestartPolicy, nextRestart } from './restart-backoff';

export interface SuperviseArgs {
  name: string;
  childPidFile: string;
  policy: RestartPolicy;
  command: string[];
}

const flags = ['--name', '--child-pid-file', '--restart-delay-ms', '--restart-delay-max-ms'] as const;

/** The supervisor's own arguments (what startSupervised gives it), or what is wrong with them. */
export function parseSuperviseArgs(argv: readonly string[]): SuperviseArgs | { error: string } {
  const end = argv.indexOf('--');
  if (end < 0 || end === argv.length - 1) return { error: 'no command after --' };
  if (end % 2 !== 0) return { error: 'each flag takes one value' };
  const given = new Map<string, string>();
  for (let i = 0; i < end; i += 2) {
    if (!(flags as readonly string[]).includes(argv[i]!)) return { error: `no flag ${argv[i]}` };
    given.set(argv[i]!, argv[i + 1]!);
  }
  const missing = flags.filter((f) => !given.has(f));
  if (missing.length > 0) return { error: `missing ${missing.join(', ')}` };
  const ms = (flag: string) => Number(given.get(flag));
  const policy = { firstDelayMs: ms('--restart-delay-ms'), maxDelayMs: ms('--restart-delay-max-ms') };
  if (
    !(Number.isInteger(policy.firstDelayMs) && policy.firstDelayMs >= 1 && Number.isInteger(policy.maxDelayMs)) ||
    policy.maxDelayMs < policy.firstDelayMs
  )
    return {
      error: `the delays must be whole ms, at least 1, the first not above the cap (got ${policy.firstDelayMs} and ${policy.maxDelayMs})`,
    };
  return { name: given.get('--name')!, childPidFile: given.get('--child-pid-file')!, policy, command: argv.slice(end + 1) };
}

/** One line as pino writes it (level 30 info, 50 error), to the log file the child shares. */
function logLine(level: 30 | 50, name: string, msg: string, fields: Record<string, unknown>): void {
  const line = JSON.stringify({ level, time: Date.now(), pid: process.pid, hostname: hostname(), name, msg, ...fields });
  // Synchronous, one write (the log is opened O_APPEND): never interleaved with the child's lines.
  writeSync(1, `${line}\n`);
}

/** Runs `args.command` and restarts it after each exit nobody asked for, until SIGTERM or SIGINT. */
function supervise(args: SuperviseArgs): void {
  const { name, childPidFile, policy, command } = args;
  let child: ChildProcess | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopping = false;
  let crashes = 0;
  let restarts = 0;

  const start = () => {
    timer = undefined;
    const startedAt = performance.now();
    const current = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'inherit', 'inherit'] });
    child = current;
    let over = false;
    const onEnd = (how: Record<string, unknown>, msg: string) => {
      if (over) return;
      over = true;
      child = undefined;
      if (stopping) process.exit(0);
      const ranMs = Math.round(performance.now() - startedAt);
      const next = nextRestart(policy, crashes, ranMs);
      crashes = next.crashes;
      restarts++;
      logLine(30, name, msg, { ...how, ranMs, delayMs: next.delayMs, restarts });
      timer = setTimeout(start, next.delayMs);
    };
    current.once('exit', (code, signal) => onEnd(signal === null ? { exitCode: code } : { signal }, 'restarting after crash'));
    // A child that could not be started has no pid and never exits; an 'error' of a running child (a
    // failed kill) is not its end.
    current.on('error', (err) => {
      if (current.pid === undefined) onEnd({ error: err.message }, 'restarting after a failed start');
    });
    if (current.pid === undefined) return;
    try {
      writeFileAtomic(childPidFile, `${current.pid}\n`);
    } catch (err) {
      // The run directory removed under a running lab: the child runs on, only its pid file is missing.
      logLine(50, name, 'cannot write the child pid file', { error: (err as Error).message });
    }
  };

  const stop = () => {
    stopping = true;
    if (timer !== undefined) clearTimeout(timer);
    if (child === undefined) process.exit(0);
    child.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  start();
}

if (require.main === module) {
  const args = parseSuperviseArgs(process.argv.slice(2));
  if ('error' in args) {
    process.stderr.write(`usage: supervise ${flags.map((f) => `${f} VALUE`).join(' ')} -- COMMAND... (${args.error})\n`);
    process.exit(2);
  }
  supervise(args);
}
