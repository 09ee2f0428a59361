import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The built CLI, as `strait` runs it (dist/src/cli/main.js). */
export const cliPath = join(__dirname, '../../src/cli/main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; one that has not answered in `timeoutMs` is killed (code null): a hang fails, it does not block. */
export function runCli(args: string[], timeoutMs = 30_000): CliRun {
  const run = spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Runs a command that must succeed and returns its JSON output. */
export function cliJson(args: string[]): unknown {
  const run = runCli(args);
  if (run.code !== 0) throw new Error(`strait ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}
