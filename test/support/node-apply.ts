/** What the eBPF node datapath answers for an apply that changed nothing: for tests that fake it or summarize it. */
import type { NodeApplyResult } from '../../src/dataplane/ebpf/node-datapath';

export const unchangedApply: NodeApplyResult = {
  overlayDeviceChanged: false,
  maps: Object.fromEntries(
    ['config', 'peers', 'routes', 'natmap', 'natmapRev', 'nodes', 'peerCounters', 'peerCounters6'].map((m) => [
      m,
      { written: 0, deleted: 0 },
    ]),
  ) as NodeApplyResult['maps'],
  attachments: [{ interface: 'strait0', direction: 'ingress', program: 'strait_from_overlay', change: 'unchanged' }],
};
