/**
 * How long the lab's supervisor (supervise.ts) waits before restarting a process that exited on its own,
 * as the kubelet's CrashLoopBackOff: the first delay after a crash, doubled after each crash in a row up to
 * a cap; a child that ran `restartResetMs` without exiting starts the count again. Pure, with the
 * validation of the flags that set it (`strait-lab up --restart-delay --restart-delay-max`).
 */
import { InputError } from '../../src/errors';

export interface RestartPolicy {
  /** The delay before the first restart of a crash loop, in ms. */
  firstDelayMs: number;
  /** The longest delay, in ms (at least `firstDelayMs`). */
  maxDelayMs: number;
}

/** 1 s, doubled up to 10 s: the kubelet's 10 s and 5 min, scaled down to a lab whose tests wait for restarts. */
export const defaultRestartPolicy: RestartPolicy = { firstDelayMs: 1_000, maxDelayMs: 10_000 };

/** A child that ran this long without exiting was not crash-looping: its next crash waits the first delay again. */
export const restartResetMs = 10_000;

/**
 * The delay before restarting a child that exited after running `ranMs`, and the crashes in a row counted
 * with this one, given `crashesBefore` (0 for a child never restarted yet).
 */
export function nextRestart(policy: RestartPolicy, crashesBefore: number, ranMs: number): { delayMs: number; crashes: number } {
  const crashes = (ranMs >= restartResetMs ? 0 : crashesBefore) + 1;
  // 2 ** n is Infinity past n = 1023, which the cap takes.
  return { delayMs: Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** (crashes - 1)), crashes };
}

/** Delays longer than an hour would look like a process that never comes back. */
const longestDelaySeconds = 3600;

/** A delay flag's value in whole ms, or an InputError naming the flag and the value as given. */
function delayMs(flag: string, value: string | number): number {
  const seconds = typeof value === 'number' ? value : value.trim() === '' ? Number.NaN : Number(value);
  const ms = Math.round(seconds * 1000);
  if (!Number.isFinite(seconds) || ms < 1 || seconds > longestDelaySeconds)
    throw new InputError(flag, value, `expected a number of seconds from 0.001 to ${longestDelaySeconds}`);
  return ms;
}

/**
 * The restart policy of `--restart-delay` and `--restart-delay-max` (seconds, as given on the command line
 * or as numbers; default 1 and 10). Without `--restart-delay-max`, a first delay above 10 s is its own cap.
 */
export function restartPolicyOf(delay?: string | number, delayMax?: string | number): RestartPolicy {
  const firstDelayMs = delay === undefined ? defaultRestartPolicy.firstDelayMs : delayMs('--restart-delay', delay);
  if (delayMax === undefined) return { firstDelayMs, maxDelayMs: Math.max(firstDelayMs, defaultRestartPolicy.maxDelayMs) };
  const maxDelayMs = delayMs('--restart-delay-max', delayMax);
  if (maxDelayMs < firstDelayMs)
    throw new InputError('--restart-delay-max', delayMax, `must be at least --restart-delay (${firstDelayMs / 1000} s)`);
  return { firstDelayMs, maxDelayMs };
}
