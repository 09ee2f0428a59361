import { quoted } from './json-text';

/**
 * Bad input: names the field and the value so an operator can fix it without reading code.
 * Thrown before anything is changed; callers must not catch it half-way through a write.
 */
export class InputError extends Error {
  override readonly name = 'InputError';
  constructor(
    readonly field: string,
    readonly value: unknown,
    /** What is wrong, without the field and value (the message has all three). */
    readonly reason: string,
  ) {
    // Quoted short: a peer's value can be megabytes, or nested too deep for JSON.stringify.
    super(`${field}: ${reason} (got ${quoted(value)})`);
  }
}

/** State on disk or in the kernel that Strait cannot adopt; the message says what to do. */
export class StateError extends Error {
  override readonly name = 'StateError';
}
