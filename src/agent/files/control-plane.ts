/**
 * The files control plane (the standalone lab): the spec file the standalone controller writes, and the
 * heartbeat file it polls. Nothing to serve or start: the files are the whole exchange.
 */
import type { Logger } from '../../log';
import type { ControlPlane, FileControlPlane } from '../control-plane-port';
import { FileSpecSource } from './spec-source';
import { FileStatusSink } from './status-sink';

export function fileControlPlane(options: FileControlPlane, log: Logger): ControlPlane {
  const source = new FileSpecSource(options.specPath, log);
  return {
    ports: {
      source,
      ...(options.nodeName === undefined ? {} : { nodeName: options.nodeName }),
      ...(options.statusPath === undefined ? {} : { sink: new FileStatusSink(options.statusPath) }),
    },
    where: { specFile: options.specPath, statusFile: options.statusPath ?? null },
    serve: async () => {},
    start: () => {},
    // Standalone, the node is cleaned by `strait agent --cleanup`.
    uninstalled: () => false,
    close: async () => source.close(),
  };
}
