import type { Command } from 'commander';
import { InputError } from '../errors';

/** Error shape on stderr: machine-readable, with the offending field and value when known. */
export function describeError(err: unknown): Record<string, unknown> {
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
export function jsonAction<A extends unknown[]>(
  action: (...args: A) => unknown | Promise<unknown>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const result = await action(...args);
    // Commander passes the command itself last.
    const command = args[args.length - 1] as Command;
    if (result !== undefined) command.configureOutput().writeOut!(`${JSON.stringify(result, null, 2)}\n`);
  };
}
