import pino from 'pino';

/**
 * Paths that may carry secrets (IPsec keys, per-peering secrets, tokens). pino removes them before
 * serialising, so no code path can log them by accident.
 */
export const redactedPaths = [
  'secret', '*.secret', '*.*.secret',
  'key', '*.key', '*.*.key',
  'psk', '*.psk', '*.*.psk',
  'token', '*.token', '*.*.token',
];

export type Logger = pino.Logger;

export function createLogger(name: string, level = process.env.STRAIT_LOG_LEVEL ?? 'info'): Logger {
  return pino({ name, level, redact: { paths: redactedPaths, censor: '[redacted]' } }, pino.destination(2));
}
