import { InputError } from '../errors';

/** Every command prints exactly one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

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

/** Runs a command action: its result is printed as JSON; an error goes to stderr and exits 1. */
export function jsonAction<A extends unknown[]>(
  action: (...args: A) => unknown | Promise<unknown>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      const result = await action(...args);
      if (result !== undefined) printJson(result);
    } catch (err) {
      process.stderr.write(`${JSON.stringify(describeError(err))}\n`);
      process.exitCode = 1;
    }
  };
}
