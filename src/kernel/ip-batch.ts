/**
 * Many `ip` (or `bridge`) commands in one process: `ip [-n NS] -batch - -force` reads them from stdin,
 * one per line, and goes on after a failed one. One process instead of one per command is what makes
 * reconciling thousands of routes cheap (BENCHMARKS.md, suite `netlink`).
 *
 * iproute2 6.1 reports a failed line on stderr as its error message(s) followed by `Command failed -:N`
 * (N counts from 1); successful lines print nothing there, or a warning (which is then counted into the
 * message of the next failed line). A line it cannot parse (a bad prefix, an unknown table name) is
 * different: ip prints the message and exits without a `Command failed` line and never runs the lines
 * after it. To tell that from a run to the end, every batch ends with a sentinel line that always fails;
 * if its failure is missing, every line after the last reported failure gets an error saying its outcome
 * is unknown (stderr does not say which line stopped it). The reconcilers validate every value they put
 * into a line, and re-read the kernel on the next pass anyway.
 */
import { spawnSync } from 'node:child_process';
import { InputError } from '../errors';
import { CommandError } from './command';

export type BatchResult = { ok: true } | { ok: false; error: string };

const failedLine = /^Command failed -:(\d+)$/;

/** Fails in every namespace with the same message: "/" is never in a link name. */
const sentinelLine = 'link show dev strait/end';

/** Pure: one result per line from the stderr of `-batch - -force` over `lineCount` lines plus the sentinel. */
export function parseBatchStderr(stderr: string, lineCount: number): BatchResult[] {
  const results: BatchResult[] = Array.from({ length: lineCount }, () => ({ ok: true }));
  let message: string[] = [];
  let lastReported = 0;
  for (const text of stderr.split('\n')) {
    const failed = failedLine.exec(text);
    if (!failed) {
      if (text.trim()) message.push(text.trim());
      continue;
    }
    const lineNumber = Number(failed[1]);
    if (lineNumber === lineCount + 1) return results;
    if (lineNumber >= 1 && lineNumber <= lineCount) {
      results[lineNumber - 1] = { ok: false, error: message.join('; ') || 'no message' };
      lastReported = lineNumber;
    }
    message = [];
  }
  const error = `outcome unknown: the batch ended early after line ${lastReported} (${message.join('; ') || 'no message'}), as it does at a line it cannot parse`;
  for (let i = lastReported; i < lineCount; i++) results[i] = { ok: false, error };
  return results;
}

/** Refuses lines that would split into two commands (or none) on the batch's stdin. */
function validateLines(lines: readonly string[]): void {
  lines.forEach((line, index) => {
    if (/[\n\r\0]/.test(line)) throw new InputError(`lines[${index}]`, line, 'a batch line must not contain a newline, carriage return or NUL');
    if (!line.trim()) throw new InputError(`lines[${index}]`, line, 'a batch line must not be empty');
    // ip treats '#' as the start of a comment, which would silently drop the rest of the command.
    if (line.includes('#')) throw new InputError(`lines[${index}]`, line, "a batch line must not contain '#'");
  });
}

function runBatch(tool: 'ip' | 'bridge', lines: readonly string[], netns?: string): BatchResult[] {
  validateLines(lines);
  if (!lines.length) return [];
  const command = [tool, ...(netns ? ['-n', netns] : []), '-batch', '-', '-force'];
  const child = spawnSync(command[0]!, command.slice(1), { input: `${[...lines, sentinelLine].join('\n')}\n`, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (child.error || child.status === null) throw new CommandError(command, child.error?.message ?? `killed by ${child.signal}`, null);
  // A failure to start (no such namespace) reports no line: every result is then "outcome unknown".
  return parseBatchStderr(child.stderr, lines.length);
}

/** `ip` commands without the leading `ip` (e.g. `route add 10.0.0.0/24 dev eth0`), in `netns` if given. */
export const runIpBatch = (lines: readonly string[], netns?: string): BatchResult[] => runBatch('ip', lines, netns);

/** `bridge` commands without the leading `bridge` (e.g. `fdb append ... dev D dst A self permanent`). */
export const runBridgeBatch = (lines: readonly string[], netns?: string): BatchResult[] => runBatch('bridge', lines, netns);
