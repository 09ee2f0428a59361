/**
 * The agent with exactly the capabilities the Helm chart gives its container (read from `helm template`:
 * the DaemonSet's agent container), started as a container runtime starts it (test/support/container.ts)
 * on a node namespace the test built: it gets ready on either dataplane with the datapath programmed,
 * and without any one of those capabilities it stops, saying why, on the dataplane that needs it.
 */
import { noProbeCache } from '../support/agent-flags';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as layout from '../../src/dataplane/ebpf/layout';
import { ip, run } from '../../src/kernel/command';
import { renderChart } from '../support/chart';
import { containerCommand, processPrivileges, requireContainerTools } from '../support/container';
import { nextReconcile } from '../support/heartbeat';
import { requireRoot } from '../support/kernel';
import { mainRoutes } from '../support/routes';
import { waitFor } from '../support/wait';
import { type AgentNode, createAgentNode, removeAgentNode } from './agent-node';
import { nodeSpecDocument, peerB, peerC, specFileText } from '../support/node-specs';
import { liveAttachments, peerIds, withMap, withPeers } from './node-view';

const cliPath = join(__dirname, '../../src/cli/main.js');

type Dataplane = 'ebpf' | 'kernel';

/**
 * Why each capability the chart adds is there: a dataplane that needs it, and the error the agent stops
 * with when it does not have it (the "error" of its stderr's last line). One case per capability at
 * least: a capability the chart adds without a case here fails the first test.
 */
const notPermitted = (what: string) =>
  `this process is not permitted what the ${what} needs (a capability missing? docs/helm.md, "The agent's privileges")`;
const withoutOne: { capability: string; dataplane: Dataplane; error: string | RegExp }[] = [
  {
    capability: 'NET_ADMIN',
    dataplane: 'ebpf',
    error: `--dataplane: ${notPermitted('eBPF dataplane')}: vxlanCollectMd (EPERM (Operation not permitted)), clsact (no VXLAN device to try it on: EPERM (Operation not permitted)) (got "ebpf")`,
  },
  {
    capability: 'NET_ADMIN',
    dataplane: 'kernel',
    error: `--dataplane: ${notPermitted('kernel fallback')}: vxlan (EPERM (Operation not permitted)), nftables (nft check failed: EPERM (Operation not permitted): netlink: Error: cache initialization failed: Operation not permitted) (got "kernel")`,
  },
  {
    capability: 'BPF',
    dataplane: 'ebpf',
    error: `--dataplane: ${notPermitted('eBPF dataplane')}: bpf (map create failed: EPERM (Operation not permitted): strait_probe), btf (load BTF into the kernel failed: EPERM (Operation not permitted); libbpf: BTF loading error: -1), lpmTrie (map create failed: EPERM (Operation not permitted): strait_probe), clsact (program load failed: EPERM (Operation not permitted)) (got "ebpf")`,
  },
  {
    // The verifier's Spectre v1 hardening: strait_load (bpf/lib/parse.h) adds a variable offset to a packet pointer.
    capability: 'PERFMON',
    dataplane: 'ebpf',
    error:
      /^load object failed: EACCES \(Permission denied\); libbpf: failed to load object '[^']*\/strait\.o'; verifier: R\d+ has pointer with unsupported alu operation, pointer arithmetic with it prohibited for !root$/,
  },
];

describe('strait agent with the capabilities of the Helm chart (real process, real kernel)', function () {
  requireRoot(this);
  this.timeout(60_000);
  let chart: { drop: string[]; add: string[] };
  let agentNode: AgentNode;
  let child: ChildProcess | undefined;
  let stderr: string;

  before(function () {
    requireContainerTools(this);
    const daemonSet = renderChart().find((o) => o.kind === 'DaemonSet' && o.metadata.name === 'strait-agent');
    const agent = daemonSet?.spec.template.spec.containers.find((c: { name: string }) => c.name === 'agent');
    assert.ok(agent, 'the chart renders the DaemonSet strait-agent with a container named agent');
    chart = agent.securityContext.capabilities;
  });
  beforeEach(() => {
    agentNode = createAgentNode('strait-caps-');
    // As on any node: the kernel refuses onlink next hops (the fallback's tunnels) while lo is down.
    ip(['link', 'set', 'lo', 'up'], agentNode.node);
    mkdirSync(join(agentNode.dir, 'nodes'));
    writeFileSync(join(agentNode.dir, 'nodes', 'n1.json'), specFileText(nodeSpecDocument([peerB, peerC])));
    stderr = '';
    child = undefined;
  });
  afterEach(() => removeAgentNode(agentNode, child));

  const statusPath = () => join(agentNode.dir, 'status', 'n1.json');
  const heartbeat = () => JSON.parse(readFileSync(statusPath(), 'utf8')) as { ready: boolean; dataplane: string; specGeneration: number };
  const logOf = () => `agent log:\n${stderr}`;

  /** Starts the agent as the container would run it, with `capabilities` only; resolves with its exit code. */
  const startAgent = (dataplane: Dataplane, capabilities: readonly string[]): Promise<number | null> => {
    const { node, pinRoot, dir } = agentNode;
    const agent = [
      process.execPath,
      cliPath,
      'agent',
      '--pod-interfaces',
      '^p-',
      '--dataplane',
      dataplane,
      '--spec',
      join(dir, 'nodes', 'n1.json'),
      '--status',
      statusPath(),
      '--pin-root',
      pinRoot,
      '--interval',
      '0.2',
      '--resync-interval',
      '0.001',
      ...noProbeCache,
    ];
    const [command, ...args] = containerCommand(node, capabilities, agent);
    child = spawn(command!, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
    return new Promise((resolve) => child!.on('close', (code) => resolve(code)));
  };
  /** Waits for a ready heartbeat; fails at once, with the log, if the agent exits first. */
  const readyHeartbeat = (exited: Promise<number | null>) =>
    Promise.race([
      waitFor('a ready heartbeat', () => heartbeat().ready, 15_000, logOf),
      exited.then((code) => Promise.reject(new Error(`the agent exited with code ${code} before a ready heartbeat\n${logOf()}`))),
    ]);
  const stop = async (exited: Promise<number | null>) => {
    child!.kill('SIGTERM');
    assert.equal(await exited, 0, logOf());
  };

  /** It runs as the container would: these capabilities in every set and no others, no new privileges. */
  const checkPrivileges = (capabilities: readonly string[]) => {
    const privileges = processPrivileges(child!.pid!);
    const expected = [...capabilities].sort();
    for (const set of ['effective', 'permitted', 'inheritable', 'bounding', 'ambient'] as const)
      assert.deepEqual(privileges[set], expected, `${set} capabilities`);
    assert.equal(privileges.noNewPrivs, true);
  };

  /** The eBPF datapath: maps filled, programs attached, overlay routes; a map entry deleted by hand comes back (every reconcile is a resync here). */
  const checkEbpfDatapath = async () => {
    const { node, pinRoot } = agentNode;
    assert.deepEqual(peerIds(pinRoot), [5, 7]);
    assert.equal(
      withMap(pinRoot, layout.maps.natmap, (m) => m.lookup('10.50.0.10')),
      '10.0.0.5',
    );
    assert.deepEqual(liveAttachments(pinRoot, node), ['p-x:strait_from_pod', 'strait0:strait_from_overlay', 'strait0:strait_to_overlay']);
    assert.deepEqual(
      mainRoutes(node)
        .filter((r) => r.dev === 'strait0')
        .map((r) => `${r.dst} ${r.protocol}`)
        .sort(),
      ['10.1.0.0/16 252', '10.2.0.0/20 252', '10.60.0.0/24 252', '10.70.0.0/26 252'],
    );
    assert.equal(
      withPeers(pinRoot, (m) => m.delete(5)),
      true,
    );
    await nextReconcile(statusPath(), 10_000, logOf);
    assert.deepEqual(peerIds(pinRoot), [5, 7], 'peer b back in strait_peers');
  };

  /** The kernel fallback: tunnels, routes, rules and NAT; a NAT table deleted by hand comes back; no monitor process runs. */
  const checkKernelDatapath = async () => {
    const { node } = agentNode;
    const lines = (text: string) => text.split('\n').filter((l) => l !== '');
    assert.deepEqual(
      lines(ip(['-o', 'link', 'show'], node))
        .map((l) => l.split(': ')[1]!.replace(/@.*/, ''))
        .sort(),
      ['lo', 'p-x', 'stp00000005', 'stp00000007', 'strait.vxlan'],
    );
    assert.deepEqual(
      lines(ip(['route', 'show', 'table', '18952'], node)).filter((l) => !l.startsWith('unreachable')),
      [
        '10.1.0.0/16 via 203.0.113.2 dev stp00000005 proto 252 onlink ',
        '10.2.0.0/20 via 203.0.113.3 dev stp00000007 proto 252 onlink ',
        '10.60.0.0/24 via 203.0.113.2 dev stp00000005 proto 252 onlink ',
        '10.70.0.0/26 via 203.0.113.3 dev stp00000007 proto 252 onlink ',
      ],
    );
    assert.deepEqual(
      lines(ip(['rule'], node)).filter((l) => /^1895\d:/.test(l)),
      [
        '18952:\tfrom all to 10.1.0.0/16 lookup 18952',
        '18952:\tfrom all to 10.60.0.0/24 lookup 18952',
        '18952:\tfrom all to 10.2.0.0/20 lookup 18952',
        '18952:\tfrom all to 10.70.0.0/26 lookup 18952',
        '18953:\tfrom all iif stp00000005 lookup 18952',
        '18953:\tfrom all iif stp00000007 lookup 18952',
      ],
    );
    const natMappings = () => run(['ip', 'netns', 'exec', node, 'nft', 'list', 'map', 'ip', 'strait', 'natmappings']);
    assert.match(natMappings(), /elements = \{ 10\.50\.0\.10 : 10\.0\.0\.5 \}/);
    run(['ip', 'netns', 'exec', node, 'nft', 'delete', 'table', 'ip', 'strait']);
    await nextReconcile(statusPath(), 10_000, logOf);
    assert.match(natMappings(), /elements = \{ 10\.50\.0\.10 : 10\.0\.0\.5 \}/, 'the NAT table back');
    // The change monitor is the agent's own netlink sockets (an agent refused them would not have started),
    // no process of its own. (Its other children come and go: the commands of a reconcile.)
    const children = lines(run(['ps', '-e', '-o', 'ppid=,args=']))
      .map((l) => /^\s*(\d+)\s+(.*)$/.exec(l)!)
      .filter((m) => m[1] === String(child!.pid));
    const monitors = children.map((m) => m[2]!).filter((args) => args.includes('monitor'));
    assert.deepEqual(monitors, []);
  };

  it('reads from the chart an agent container that drops ALL and adds only capabilities shown needed below', () => {
    assert.deepEqual(chart.drop, ['ALL']);
    assert.deepEqual([...chart.add].sort(), [...new Set(withoutOne.map((c) => c.capability))].sort());
  });

  for (const dataplane of ['ebpf', 'kernel'] as const) {
    it(`gets ready on --dataplane ${dataplane} with exactly the chart's capabilities, with the datapath programmed and repaired`, async () => {
      const exited = startAgent(dataplane, chart.add);
      await readyHeartbeat(exited);
      const { ready, specGeneration } = heartbeat();
      assert.deepEqual({ ready, dataplane: heartbeat().dataplane, specGeneration }, { ready: true, dataplane, specGeneration: 1 });
      checkPrivileges(chart.add);
      await (dataplane === 'ebpf' ? checkEbpfDatapath() : checkKernelDatapath());
      assert.equal(heartbeat().ready, true, logOf());
      await stop(exited);
    });
  }

  for (const { capability, dataplane, error } of withoutOne) {
    it(`stops on --dataplane ${dataplane} without ${capability}, saying why, before reporting any status`, async () => {
      const exited = startAgent(
        dataplane,
        chart.add.filter((c) => c !== capability),
      );
      assert.equal(await Promise.race([exited, sleep(15_000).then(() => 'still running')]), 1, logOf());
      const last = JSON.parse(stderr.trim().split('\n').at(-1)!) as { error: string };
      if (typeof error === 'string') assert.equal(last.error, error);
      else assert.match(last.error, error);
      assert.equal(existsSync(statusPath()), false, 'no heartbeat');
    });
  }

  it('runs the kernel fallback with NET_ADMIN alone: BPF and PERFMON are for the eBPF dataplane', async () => {
    const exited = startAgent('kernel', ['NET_ADMIN']);
    await readyHeartbeat(exited);
    assert.equal(heartbeat().dataplane, 'kernel');
    checkPrivileges(['NET_ADMIN']);
    await checkKernelDatapath();
    await stop(exited);
  });
});
