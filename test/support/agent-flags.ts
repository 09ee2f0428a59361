/**
 * For agents under test that are not about the probe cache: without it each would keep its probe report
 * in the host's /run/strait, a file no test cleans up.
 */
export const noProbeCache = ['--probe-cache', 'none'];
