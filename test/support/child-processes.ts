/**
 * Records every process the code under test starts through node:child_process, in this process: the
 * argv (exec's command line as `/bin/sh -c COMMAND`), the stdin given as `input`, and the environment
 * when one is given. For claims about what a child may see, such as keys never in an argv.
 */
import childProcess from 'node:child_process';

export interface StartedProcess {
  argv: string[];
  /** `input` of the *Sync functions: what the child reads on stdin. */
  input?: string;
  /** An environment passed explicitly (else the child inherits ours). */
  env?: Record<string, string | undefined>;
}

type Options = { input?: string | Buffer; env?: Record<string, string | undefined> } | undefined;

const wrapped = ['spawn', 'spawnSync', 'execFile', 'execFileSync', 'exec', 'execSync', 'fork'] as const;

/** Runs `action` with the recording in place (removed after, also on a throw); what it started, and its outcome. */
export function recordChildProcesses<T>(action: () => T): { started: StartedProcess[]; result?: T; error?: unknown } {
  const started: StartedProcess[] = [];
  const module = childProcess as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = new Map(wrapped.map((name) => [name, module[name]!]));
  for (const name of wrapped) {
    const original = originals.get(name)!;
    module[name] = (...args: unknown[]) => {
      const shell = name === 'exec' || name === 'execSync';
      // (file, args?, options?) or (command, options?): args may be left out, options then come second.
      const list = !shell && Array.isArray(args[1]) ? (args[1] as string[]) : [];
      const options = (shell || !Array.isArray(args[1]) ? args[1] : args[2]) as Options;
      const argv = shell
        ? ['/bin/sh', '-c', String(args[0])]
        : name === 'fork'
          ? [process.execPath, String(args[0]), ...list]
          : [String(args[0]), ...list];
      const input = options?.input === undefined ? {} : { input: String(options.input) };
      started.push({ argv, ...input, ...(options?.env ? { env: options.env } : {}) });
      return original(...args);
    };
  }
  try {
    return { started, result: action() };
  } catch (error) {
    return { started, error };
  } finally {
    for (const [name, original] of originals) module[name] = original;
  }
}
