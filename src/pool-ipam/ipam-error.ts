import type { CniErrorCode } from './protocol';

/**
 * A failure of a pool IPAM call that the CNI runtime should see with its own code (no usable pool, pool
 * exhausted, gateway unreachable...): the service answers it as an ErrorResponse with this code, and the
 * plugin prints it. Anything else a handler throws is answered as code 5 (I/O failure).
 */
export class IpamError extends Error {
  override readonly name = 'IpamError';
  constructor(
    readonly code: CniErrorCode,
    /** Names the pool, field or object concerned. */
    msg: string,
    readonly details?: string,
  ) {
    super(msg);
  }
}
