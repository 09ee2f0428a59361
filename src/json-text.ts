/**
 * JSON text from outside (a file another process or a peer wrote, the CNI plugin's stdin, a request body
 * on the pool IPAM's socket): parsed, or why it is not JSON in words of our own (V8's parser messages
 * quote the input as "Unexpected token"); and a value as an error message quotes it, however long or
 * deep. Loaded by the CNI plugin: no packages.
 */

/** The parsed value, or why `text` is not JSON. */
export function parseJsonText(text: string): { value: unknown } | { problem: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    return { problem: syntaxProblem(text, (err as Error).message) };
  }
}

function syntaxProblem(text: string, message: string): string {
  if (text.trim() === '') return 'empty';
  if (/^Unexpected end of JSON input/.test(message)) return `cut short: it ends inside a value, after ${text.length} characters`;
  const token = /^Unexpected token '([^]*?)', /.exec(message);
  if (token) return `${JSON.stringify(token[1])} where no JSON value can have it`;
  // "Expected ':' after property name in JSON at position 5", "Bad control character in string literal in JSON at position 2"...
  const at = /^([^]*?) (in|after) JSON at position (\d+)/.exec(message);
  if (at)
    return `${at[1]!.charAt(0).toLowerCase()}${at[1]!.slice(1)}${at[2] === 'after' ? ' after the value' : ''} at character ${Number(at[3]) + 1}`;
  return 'not JSON';
}

/** `value` as JSON, cut to `max` characters (saying how long it was); one too deep to print, said so. */
export function quoted(value: unknown, max = 200): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return 'a value nested too deep to print';
  }
  if (text === undefined) return String(value);
  return text.length > max ? `${text.slice(0, max)}... (${text.length} characters)` : text;
}
