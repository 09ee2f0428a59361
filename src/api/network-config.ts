/**
 * NetworkConfig: a cluster's networks offered to one peer (spec, written by the owner and replicated
 * into the peer) and the peer's answer (status, written by the receiver: where it placed them). Named
 * `<owner>.<recipient>`. Checked by the validators the build compiled from network-config-schema.ts.
 */
import { InputError } from '../errors';
import { checkCompiled } from './compiled-validators';
import type { NetworkConfigSpec, NetworkConfigStatus } from './network-config-schema';

export type { GatewayEndpoint, NetworkConfigSpec, NetworkConfigStatus } from './network-config-schema';

export const readNetworkConfigSpec = (value: unknown, root = 'spec'): NetworkConfigSpec => checkCompiled('networkConfigSpec', value, root);
export const readNetworkConfigStatus = (value: unknown, root = 'status'): NetworkConfigStatus =>
  checkCompiled('networkConfigStatus', value, root);

/** What a status says about one family of the spec it answers. */
export type FamilyAnswer = Required<Omit<NetworkConfigStatus, 'processed' | 'secondary'>>;

/**
 * A status's answer about the spec's own (primary) family: undefined where the receiver has no such family
 * (none of the three fields), refused where only some of them are there.
 */
export function primaryAnswer(status: NetworkConfigStatus, root = 'status'): FamilyAnswer | undefined {
  const { remappedPodCIDR, remappedExternalCIDR, observed } = status;
  if (remappedPodCIDR === undefined && remappedExternalCIDR === undefined && observed === undefined) return undefined;
  for (const [field, value] of Object.entries({ remappedPodCIDR, remappedExternalCIDR, observed }))
    if (value === undefined)
      throw new InputError(
        `${root}.${field}`,
        undefined,
        'is required beside the rest of the answer about the primary family (remappedPodCIDR, remappedExternalCIDR, observed: all or none)',
      );
  return { remappedPodCIDR: remappedPodCIDR!, remappedExternalCIDR: remappedExternalCIDR!, observed: observed! };
}
