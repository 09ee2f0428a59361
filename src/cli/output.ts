import { type Command, CommanderError } from 'commander';
import { InputError } from '../errors';

/** Where a run of the CLI writes: the process's stdout and stderr, or a caller's (in-process runs). */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

export const processOutput: CliOutput = { out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text) };

/** Error shape on stderr: machine-readable, with the offending field and value when known. */
function describeError(err: unknown): Record<string, unknown> {
  if (err instanceof InputError) return { error: err.message, field: err.field, value: err.value };
  if (err instanceof Error) {
    const extra: Record<string, unknown> = {};
    for (const k of ['code', 'errno', 'operation'] as const) {
      const v = (err as unknown as Record<string, unknown>)[k];
      if (v !== undefined) extra[k] = v;
    }
    return { error: err.message, ...extra };
  }
  return { error: String(err) };
}

/**
 * A command action whose result is printed as one JSON document on stdout (the command's output, so a
 * caller running the CLI in-process reads it). An error is not caught here: the CLI's runner prints
 * every error, a usage error too, the same way (src/cli/main.ts).
 */
export function jsonAction<A extends unknown[]>(action: (...args: A) => unknown | Promise<unknown>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const result = await action(...args);
    // Commander passes the command itself last.
    const command = args[args.length - 1] as Command;
    if (result !== undefined) command.configureOutput().writeOut!(`${JSON.stringify(result, null, 2)}\n`);
  };
}

/**
 * Runs one command line (`argv` as process.argv: node, script, arguments) on the program `build` makes
 * (`strait`'s, src/cli/main.ts; the lab's, lab/src/main.ts) and returns its exit code. Every error, a
 * usage error too, is one JSON document on stderr (`{"error", "field"?, "value"?}`).
 */
export async function runProgram(build: () => Command, argv: readonly string[], output: CliOutput): Promise<number> {
  try {
    await build().parseAsync([...argv]);
    return 0;
  } catch (err) {
    // --help and --version: printed, and commander's exit is turned into this error (exitOverride).
    if (err instanceof CommanderError) return err.exitCode;
    output.err(`${JSON.stringify(describeError(err))}\n`);
    return 1;
  }
}
