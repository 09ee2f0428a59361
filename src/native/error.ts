/**
 * The native binding's failures, one class for each thing that can fail (the C++ side picks it,
 * native/src/addon.h NativeErrorKind): each carries the errno, its name, the operation that failed and
 * what libbpf printed meanwhile (the verifier log when a program is rejected).
 */
export class NativeError extends Error {
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

/** The bpf(2) syscall, libbpf, BTF, bpffs, TC attachments. */
export class BpfError extends NativeError {
  override readonly name = 'BpfError';
}

/** rtnetlink and xfrm over netlink, the netlink monitor, interfaces (links). */
export class NetlinkError extends NativeError {
  override readonly name = 'NetlinkError';
}

/** libnftables: a ruleset refused, with the library's own words. */
export class NftablesError extends NativeError {
  override readonly name = 'NftablesError';
}

/** Opening or entering a network namespace. */
export class NetnsError extends NativeError {
  override readonly name = 'NetnsError';
}

/** The address probe's packet sockets (ARP and NDP). */
class SocketError extends NativeError {
  override readonly name = 'SocketError';
}

/** The classes the binding makes its errors of, by kind (native/src/errors.cc setErrorClasses). */
export const nativeErrorClasses = { bpf: BpfError, netlink: NetlinkError, nftables: NftablesError, netns: NetnsError, socket: SocketError };

/** Narrowing helper for any native failure: `isNativeError(err, 'ENOENT')`. */
export function isNativeError(err: unknown, code?: string): err is NativeError {
  return err instanceof NativeError && (code === undefined || err.code === code);
}

/** Narrowing helper: `isBpfError(err, 'ENOENT')`. */
export function isBpfError(err: unknown, code?: string): err is BpfError {
  return err instanceof BpfError && (code === undefined || err.code === code);
}
