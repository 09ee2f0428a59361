#!/usr/bin/env node
/**
 * `strait-lab`, the lab's command line (docs/lab.md): the bin of the package strait-lab (lab/bin/strait-lab.js),
 * or `node dist/lab/src/main.js` from the repository. Its errors are the product CLI's JSON, its verbs
 * are in cli.ts.
 */
import type { Command } from 'commander';
import { type CliOutput, processOutput, runProgram } from '../../src/cli/output';
import { StraitCommand } from '../../src/cli/usage-error';
import { registerLabCommands } from './cli';

/** The lab's program with every verb. */
export function buildLabCli(output: CliOutput = processOutput): Command {
  // Set before the verbs are added: each subcommand copies them when it is made.
  const program = new StraitCommand('strait-lab').configureOutput({ writeOut: output.out, writeErr: output.err }).exitOverride();
  registerLabCommands(program);
  return program;
}

/** Runs one command line (`argv` as process.argv: node, script, arguments) and returns its exit code. */
export async function runLabCli(argv: readonly string[], output: CliOutput = processOutput): Promise<number> {
  return runProgram(() => buildLabCli(output), argv, output);
}

/** Runs this process's command line. */
export function main(): void {
  void runLabCli(process.argv).then((code) => {
    // A verb may have set its own exit code (test, report: failed checks) and still returned.
    if (code !== 0) process.exitCode = code;
  });
}

if (require.main === module) main();
