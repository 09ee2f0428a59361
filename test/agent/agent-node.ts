/**
 * A node for an agent process under test: its own network namespace with a pod interface (`p-x`, the
 * host side of a veth into a pod namespace), a pin root on bpffs and a temporary directory. Removed
 * whole, also when the test failed half-way, and the agent killed first if it still runs.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanupNodeDataplanes } from '../../src/dataplane/open';
import { ensureBpffs } from '../../src/native';
import { ip } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { uniqueName } from '../support/kernel';

export interface AgentNode {
  node: string;
  pod: string;
  pinRoot: string;
  dir: string;
}

export function createAgentNode(dirPrefix: string): AgentNode {
  ensureBpffs();
  const made: AgentNode = {
    node: uniqueName('strait-test-node'),
    pod: uniqueName('strait-test-pod'),
    pinRoot: join('/sys/fs/bpf', uniqueName('strait-test')),
    dir: mkdtempSync(join(tmpdir(), dirPrefix)),
  };
  createNetns(made.node);
  createNetns(made.pod);
  ip(['link', 'add', 'p-x', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', made.pod], made.node);
  return made;
}

export function removeAgentNode({ node, pod, pinRoot, dir }: AgentNode, agent: ChildProcess | undefined): void {
  try {
    if (agent && agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
    cleanupNodeDataplanes(pinRoot, node);
  } finally {
    rmSync(pinRoot, { recursive: true, force: true });
    deleteNetns(node);
    deleteNetns(pod);
    rmSync(dir, { recursive: true, force: true });
  }
}
