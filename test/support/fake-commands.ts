/**
 * Stand-ins for commands a script runs (apt-get, npm, curl...): a temporary directory to put first on PATH,
 * where each named command appends "name args..." to a shared log and runs the given shell body (default:
 * exit 0). For scripts whose claim is which commands they run, with which arguments, and which not.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface FakeCommands {
  /** The directory to put first on PATH. */
  dir: string;
  /** PATH with the fakes first. */
  path: string;
  /** The calls so far, one "name args..." a line. */
  calls(): string[];
  cleanup(): void;
}

/** `commands`: name -> the shell body run after logging ("$@" are the arguments). */
export function fakeCommands(commands: Record<string, string>): FakeCommands {
  const dir = mkdtempSync(join(tmpdir(), 'strait-fakes-'));
  const log = join(dir, 'calls.log');
  writeFileSync(log, '');
  for (const [name, body] of Object.entries(commands)) {
    const file = join(dir, name);
    writeFileSync(file, `#!/bin/sh\necho "${name} $*" >> '${log}'\n${body || 'exit 0'}\n`);
    chmodSync(file, 0o755);
  }
  return {
    dir,
    path: `${dir}:${process.env.PATH ?? ''}`,
    calls: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
