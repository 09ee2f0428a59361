/**
 * What a probe that could not be sent means for the CNI caller. The namespace and the interface are the
 * runtime's CNI_NETNS and CNI_IFNAME, read first by the probe: a path that is no namespace, or a name
 * that is no Ethernet interface there, is the runtime's input (code 4, naming the variable and value);
 * anything else, a capability the service lacks (EPERM) among them, is a failure of this node (code 5,
 * saying what was being probed).
 */
import { type NativeError, NetlinkError, NetnsError } from '../../native/error';
import { type Ip, formatIp } from '../../net/cidr';
import { IpamError } from '../ipam-error';
import { cniErrorCodes } from '../protocol';

/** The errors that say the input names nothing usable, per operation of the probe. */
const netnsErrors: Record<string, string[]> = {
  'open network namespace': ['ENOENT', 'ENOTDIR', 'ELOOP', 'ENAMETOOLONG'],
  'enter network namespace': ['EINVAL'],
};
const ifnameErrors: Record<string, string[]> = { 'find interface': ['ENODEV'], 'read interface address': ['EOPNOTSUPP'] };
const is = (errors: Record<string, string[]>, err: NativeError) =>
  Object.hasOwn(errors, err.operation) && errors[err.operation]!.includes(err.code);

export function probeFailure(err: unknown, probe: { netns: string; ifname: string; address: Ip }): IpamError {
  const { netns, ifname, address } = probe;
  const why = err instanceof Error ? err.message : String(err);
  if (err instanceof NetnsError && is(netnsErrors, err)) {
    return new IpamError(
      cniErrorCodes.invalidEnvironment,
      `CNI_NETNS: not a network namespace this node can enter to probe from (${err.operation}: ${err.code}) (got ${JSON.stringify(netns)})`,
    );
  }
  if (err instanceof NetlinkError && is(ifnameErrors, err)) {
    const what =
      err.code === 'ENODEV'
        ? `no such interface in ${netns}`
        : `not an Ethernet interface in ${netns}, so no ARP/NDP probe can be sent from it`;
    return new IpamError(
      cniErrorCodes.invalidEnvironment,
      `CNI_IFNAME: ${what} (${err.operation}: ${err.code}) (got ${JSON.stringify(ifname)})`,
    );
  }
  return new IpamError(cniErrorCodes.ioFailure, `cannot probe ${formatIp(address)} from ${ifname} in ${netns}: ${why}`);
}
