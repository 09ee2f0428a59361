/**
 * What a kubelet writes that Strait must not react to: its periodic status report, which moves the
 * conditions' lastHeartbeatTime and nothing else (a new resourceVersion, a watch event on every Node
 * informer, on every node of the cluster). Returns the Node's new resourceVersion.
 */
import { type CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

export async function nodeStatusHeartbeat(core: CoreV1Api, name: string): Promise<string> {
  const node = await core.readNode({ name });
  const conditions = (node.status?.conditions ?? []).map((c) => ({ ...c, lastHeartbeatTime: new Date() }));
  const written = await core.patchNodeStatus(
    { name, body: { status: { conditions } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  if (written.metadata?.resourceVersion === node.metadata?.resourceVersion) throw new Error(`the heartbeat of Node ${name} wrote nothing`);
  return written.metadata?.resourceVersion ?? '';
}
