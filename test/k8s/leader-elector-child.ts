/**
 * A LeaderElector in a process of its own, for the test that kills a leader (SIGKILL: no release).
 * argv: kubeconfig file, identity, lease name. Prints "started" and "stopped" lines as it leads.
 */
import { CoordinationV1Api } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../src/k8s/kubeconfig';
import { LeaderElector } from '../../src/k8s/leader-elector';
import { testLeaseTimings } from './lease-timings';

const [file, identity, name] = process.argv.slice(2) as [string, string, string];
const api = loadKubeConfig({ file }).makeApiClient(CoordinationV1Api);
new LeaderElector({
  api,
  namespace: 'kube-system',
  name,
  identity,
  ...testLeaseTimings,
  onStartedLeading: () => void process.stdout.write('started\n'),
  onStoppedLeading: () => void process.stdout.write('stopped\n'),
}).start();
