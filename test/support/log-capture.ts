/** A pino Logger whose lines a test reads (what a component warned about, what it never logged). */
import pino from 'pino';
import type { Logger } from '../../src/log';
import { loggerOptions } from '../../src/log';

export interface CapturedLog {
  log: Logger;
  /** Every line, parsed, in order. */
  lines: Record<string, unknown>[];
  /** The raw text written, to check what must never appear in it. */
  text(): string;
}

export function captureLog(level = 'debug'): CapturedLog {
  const raw: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { ...loggerOptions, level },
    {
      write(line: string) {
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
  );
  return { log, lines, text: () => raw.join('') };
}
