/** Short lease timings for the leader election tests (seconds; client-go's defaults are 15, 10 and 2). */
export const testLeaseTimings = { leaseDuration: 2, renewDeadline: 1.5, retryPeriod: 0.25 };
