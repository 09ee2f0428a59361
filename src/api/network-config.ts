/**
 * NetworkConfig: a cluster's networks offered to one peer (spec, written by the owner and replicated
 * into the peer) and the peer's answer (status, written by the receiver: where it placed them). Named
 * `<owner>.<recipient>`. Checked by the validators the build compiled from network-config-schema.ts.
 */
import { checkCompiled } from './compiled-validators';
import type { NetworkConfigSpec, NetworkConfigStatus } from './network-config-schema';

export type { GatewayEndpoint, NetworkConfigSpec, NetworkConfigStatus } from './network-config-schema';

export const readNetworkConfigSpec = (value: unknown, root = 'spec'): NetworkConfigSpec => checkCompiled('networkConfigSpec', value, root);
export const readNetworkConfigStatus = (value: unknown, root = 'status'): NetworkConfigStatus =>
  checkCompiled('networkConfigStatus', value, root);
