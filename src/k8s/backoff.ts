/**
 * client-go's jittered exponential backoff (k8s.io/apimachinery/pkg/util/wait: Backoff.Step, Jitter,
 * and the ExponentialBackoffManager its reflector restarts list-and-watch with), pure: each failure waits
 * `duration`, stretched by a random share of up to `jitter` of it, and doubles `duration` up to `cap`;
 * a failure after `resetAfter` without one starts again from the first step. The jitter spreads the
 * relists of many agents after an API server restart, which would otherwise all come in the same instant.
 */
export interface BackoffParameters {
  /** The first step, ms. */
  initial: number;
  factor: number;
  /** Each delay is `step × (1 + random × jitter)`. */
  jitter: number;
  /** The largest step, ms (a delay may be up to `cap × (1 + jitter)`). */
  cap: number;
  /** A failure this long (ms) after the last one starts from `initial` again. */
  resetAfter: number;
}

/** The reflector's: NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0). */
export const reflectorBackoff: BackoffParameters = { initial: 800, factor: 2, jitter: 1, cap: 30_000, resetAfter: 120_000 };

export interface BackoffState {
  /** The next step before jitter, ms. */
  step: number;
  /** When the last failure was (ms), if any. */
  lastFailure?: number;
}

export const initialBackoff = (p: BackoffParameters): BackoffState => ({ step: p.initial });

/** The delay before the next attempt after a failure at `now`, and the state after it; `random` in [0, 1). */
export function nextBackoff(
  state: BackoffState,
  p: BackoffParameters,
  now: number,
  random: number = Math.random(),
): { delay: number; state: BackoffState } {
  const step = state.lastFailure !== undefined && now - state.lastFailure >= p.resetAfter ? p.initial : state.step;
  return {
    delay: step + random * p.jitter * step,
    state: { step: Math.min(step * p.factor, p.cap), lastFailure: now },
  };
}
