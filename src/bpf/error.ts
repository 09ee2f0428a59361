/**
 * Every failure of the native binding: the errno, its name, the operation that failed and what libbpf
 * printed meanwhile (the verifier log when a program is rejected).
 */
export class BpfError extends Error {
  override readonly name = 'BpfError';
  declare readonly errno: number;
  declare readonly code: string;
  declare readonly operation: string;
  /** libbpf's messages during the operation, if any. */
  declare readonly libbpfLog?: string;
  /** The kernel verifier's log, when a program was rejected at load. */
  declare readonly verifierLog?: string;
  /** For batch operations: elements processed before the failure. */
  declare readonly count?: number;
}

/** Narrowing helper: `isBpfError(err, 'ENOENT')`. */
export function isBpfError(err: unknown, code?: string): err is BpfError {
  return err instanceof BpfError && (code === undefined || err.code === code);
}
