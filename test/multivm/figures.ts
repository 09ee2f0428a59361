/**
 * The e2e bench's figures that make sense across VMs: connections per second (tcp-crr) and a stream
 * (iperf3) from a pod of one cluster to a pod of the other, through both gateways, beside the same
 * tools between the two gateway machines themselves over the public network (the plain-route limit of
 * these emulated wires), measured in the same run. Request/response latency is left out: under TCG it
 * measures the emulator's scheduling, not the path.
 */
import { parseCrr, parseIperf3, toolCommands, toolSeconds } from '../bench/e2e/traffic';
import { podNetns } from '../../lab/src/names';

export interface CrossFigures {
  path: string;
  connectionsPerSecond: number;
  streamMbps: number;
}

type Exec = (machine: string, script: string, timeoutMs: number) => Promise<{ code: number; output: string }>;

async function must(exec: Exec, machine: string, script: string): Promise<string> {
  const r = await exec(machine, script, (toolSeconds + 60) * 1000);
  if (r.code !== 0) throw new Error(`${machine}: exit ${r.code} of ${script}:\n${r.output}`);
  return r.output;
}

/** A command line for the machine's shell, in `netns` when given. */
const inNetns = (netns: string | undefined, argv: readonly string[]) =>
  [...(netns ? ['ip', 'netns', 'exec', netns] : []), ...argv].join(' ');

/** The bench's two servers where `to` is (a pod namespace, or the machine itself), in the background, both listening. */
const serve = (netns: string | undefined) =>
  [
    `${inNetns(netns, ['setsid', ...toolCommands.crrServer])} </dev/null >/dev/null 2>&1 &`,
    `${inNetns(netns, [...toolCommands.iperf3Server, '--daemon'])} </dev/null >/dev/null 2>&1`,
    `for i in $(seq 100); do ${inNetns(netns, ['ss', '-Htln'])} | grep -q ':${toolCommands.crrServer.at(-1)} ' && ${inNetns(netns, ['ss', '-Htln'])} | grep -q ':${toolCommands.iperf3Server.at(-1)} ' && exit 0; sleep 0.1; done; exit 1`,
  ].join('\n');

/**
 * One path: servers on `to` (in pod `toPod`, or on the machine), clients on `from` dialling `address`.
 * JSON outputs are the last line of what the command printed (the VM's channel carries stderr too).
 */
async function measure(
  exec: Exec,
  path: string,
  from: { machine: string; pod?: string },
  to: { machine: string; pod?: string },
  address: string,
): Promise<CrossFigures> {
  const toNetns = to.pod ? podNetns(to.pod) : undefined;
  const fromNetns = from.pod ? podNetns(from.pod) : undefined;
  await must(exec, to.machine, serve(toNetns));
  try {
    const crr = await must(exec, from.machine, inNetns(fromNetns, toolCommands.crrClient(address)));
    const iperf = await must(exec, from.machine, inNetns(fromNetns, toolCommands.iperf3Client(address)));
    return {
      path,
      connectionsPerSecond: parseCrr(lastJson(crr)).perSecond,
      streamMbps: parseIperf3(iperf.slice(iperf.indexOf('{'))) * 1000,
    };
  } finally {
    await exec(to.machine, 'pkill -x iperf3; pkill -f "tcp-crr serve"; true', 30_000);
  }
}

const lastJson = (output: string) =>
  output
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .at(-1) ?? output;

/**
 * The two-clusters lab's figures: pod to pod across the peering (A's view of B's gateway pod is
 * 10.1.0.10), and the gateway machines to each other over the public network.
 */
export async function crossVmFigures(exec: Exec): Promise<CrossFigures[]> {
  return [
    await measure(exec, 'plain route a-gw -> b-gw (public network)', { machine: 'a-gw' }, { machine: 'b-gw' }, '203.0.113.21'),
    await measure(
      exec,
      'peered a-gw-p -> b-gw-p (10.1.0.10)',
      { machine: 'a-gw', pod: 'a-gw-p' },
      { machine: 'b-gw', pod: 'b-gw-p' },
      '10.1.0.10',
    ),
  ];
}
