/**
 * Where an agent's NodeDataplane comes from and where it reports, by mode: files (the standalone lab:
 * a spec file and a heartbeat file) or the API server (`--kubernetes`: informers on its NodeDataplane and
 * the Nodes, the status subresource). The reconcile loop (agent.ts) is the same for both.
 */
import type { Logger } from '../log';
import type { ControlPlane, ControlPlaneOptions } from './control-plane-port';
import { fileControlPlane } from './files/control-plane';

/**
 * The control plane of the mode asked for. The Kubernetes one is loaded only then: the client library
 * takes a quarter of a second to load, which an agent on files must not pay at every start.
 */
export async function openControlPlane(options: ControlPlaneOptions, log: Logger): Promise<ControlPlane> {
  if (options.kind === 'files') return fileControlPlane(options, log);
  return (await import('./kubernetes/control-plane')).kubernetesControlPlane(options, log);
}
