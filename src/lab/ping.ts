/**
 * ping(8) as a probe: how many echo requests went out and how many replies came back, read from its
 * statistics line. ping exits 0 with replies, 1 with none (or fewer than asked before a deadline), 2 on
 * any other error: only 0 and 1 are answers about the path; anything else is a failure of the probe.
 */
export interface PingCount {
  transmitted: number;
  received: number;
}

/** The counts of ping's summary, or undefined when it printed none (it did not run, or failed early). */
export function pingStatistics(output: string): PingCount | undefined {
  const m = /(\d+) packets transmitted, (\d+) (?:packets )?received/.exec(output);
  return m ? { transmitted: Number(m[1]), received: Number(m[2]) } : undefined;
}

/** The counts of a finished ping, or an error naming what went wrong when it is not an answer. */
export function pingOutcome(exitCode: number, stdout: string, stderr: string): PingCount {
  const counts = pingStatistics(stdout);
  if ((exitCode === 0 || exitCode === 1) && counts) return counts;
  throw new Error(`ping did not give an answer (exit ${exitCode}): ${(stderr || stdout).trim() || 'no output'}`);
}
