/**
 * The names Strait's controller, agents and lab agree on inside a cluster, and the namespace Strait runs
 * in. No client library is imported here: every CLI start reads this module.
 */
import { InputError } from '../errors';

/** Where the controller's Lease, the peers' Secrets and the Events live by default. */
export const defaultNamespace = 'strait-system';

/** The Lease the controller replicas campaign for. */
export const controllerLeaseName = 'strait-controller';

/** The Secret holding a peer's kubeconfig (key `peerKubeconfigKey`), written by a person. */
export const peerSecretName = (peer: string) => `strait-peer-${peer}`;
export const peerKubeconfigKey = 'kubeconfig';

const namespacePattern = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Strait's namespace: `--namespace`, else POD_NAMESPACE (the downward API), else the default; checked, naming where it came from. */
export function straitNamespace(flag: string | undefined, env: { POD_NAMESPACE?: string }): string {
  const [field, namespace] =
    flag !== undefined
      ? ['--namespace', flag]
      : env.POD_NAMESPACE
        ? ['POD_NAMESPACE', env.POD_NAMESPACE]
        : ['--namespace', defaultNamespace];
  if (!namespacePattern.test(namespace))
    throw new InputError(
      field,
      namespace,
      'a namespace is 1 to 63 lowercase letters, digits or "-", starting and ending with a letter or digit',
    );
  return namespace;
}
