/**
 * A token bucket (golang.org/x/time/rate's, as client-go's spam filter uses it): `burst` tokens at
 * most, refilled at `perSecond`; a write spends one. As a value, so a test steps it through time.
 */
export interface TokenBucket {
  tokens: number;
  /** When `tokens` was counted (ms since the epoch). */
  at: number;
}

export interface BucketRate {
  burst: number;
  perSecond: number;
}

export const fullBucket = (rate: BucketRate, now: number): TokenBucket => ({ tokens: rate.burst, at: now });

/** The bucket at `now`, refilled for the time since it was counted. */
export function refilled(bucket: TokenBucket, rate: BucketRate, now: number): TokenBucket {
  const elapsed = Math.max(0, now - bucket.at) / 1000;
  return { tokens: Math.min(rate.burst, bucket.tokens + elapsed * rate.perSecond), at: now };
}

/** Spends a token when there is one: the bucket after, and whether the write may go. */
export function take(bucket: TokenBucket, rate: BucketRate, now: number): { bucket: TokenBucket; allowed: boolean } {
  const current = refilled(bucket, rate, now);
  return current.tokens >= 1 ? { bucket: { ...current, tokens: current.tokens - 1 }, allowed: true } : { bucket: current, allowed: false };
}
