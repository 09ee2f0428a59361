/**
 * Buckets of the reconcile duration histograms, in seconds, from a millisecond to 10 s: a reconcile
 * that changes nothing takes about a millisecond, a large spec or a slow API server much longer.
 */
export const reconcileBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
