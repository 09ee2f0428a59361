/**
 * N NatMappings on the hub of the bench's lab: the hub's controller gets N reflections (the real pod's
 * IPv4 and IPv6 addresses, and N - 2 of addresses in the spoke's PodCIDR where no pod lives) and is restarted with them; the
 * bench then waits until the hub gateway's agent has applied a spec with N NatMappings.
 */
import { join } from 'node:path';
import type { ReflectionConfig } from '../../../src/api/controller-config';
import { type ClusterView } from '../../../lab/src/checks';
import { convergenceGaps, readLabState, reconfigureController } from '../../../lab/src/lab';
import { openLabState } from '../../../lab/src/lab-state';
import { findPod, type LabTopology } from '../../../lab/src/topology';
import { formatIp, parseCidr } from '../../../src/net/cidr';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';

/** The bench's lab: the default lab's shape with room for 100,000 NatMappings. */
export const benchTopologyPath = join(__dirname, '..', '..', '..', '..', 'test', 'bench', 'e2e', 'topology.yaml');

/** Who is who in topology.yaml. */
export const roles = {
  hub: 'cluster-b',
  hubGateway: 'b-gw',
  client: 'a-w1-p',
  samePod: 'a-gw-p',
  peeredPod: 'b-w1-p',
  reflectedPod: 'c-w1-p',
} as const;

/**
 * `n` reflections: `real` (the reflected pod's address in each family), and n - real.length addresses
 * from the upper half of the spoke's IPv4 PodCIDR, where no pod lives (the lab's nodes take the lowest
 * /24s) (pure).
 */
export function benchReflections(n: number, real: readonly ReflectionConfig[], fromPodCIDR: string): ReflectionConfig[] {
  const [first] = real;
  if (!first || n < real.length) throw new Error(`${n} reflections cannot hold the ${real.length} of the real pod`);
  const cidr = parseCidr('podCIDR', fromPodCIDR);
  const half = 2n ** BigInt(32 - cidr.prefix) / 2n;
  if (BigInt(n) >= half) throw new Error(`${fromPodCIDR} has no room for ${n} reflections in its upper half`);
  const unused = Array.from({ length: n - real.length }, (_, i) => ({
    to: first.to,
    fromPeer: first.fromPeer,
    podIP: formatIp({ family: 4, value: cidr.base + half + BigInt(i + 1) }),
  }));
  return [...unused, ...real];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Gives the hub `n` reflections and waits until every node runs its latest spec and the hub gateway's
 * holds `n` NatMappings. Returns each cluster's view, the hub gateway's spec and the address the client
 * dials for the reflected pod.
 */
export async function setMappings(
  runDir: string,
  topology: LabTopology,
  n: number,
  say: (line: string) => void,
  timeoutMs: number,
): Promise<{ views: Record<string, ClusterView>; hubGatewaySpec: NodeDataplaneSpec; dialled: string; dialled6: string }> {
  const reflected = findPod(topology, roles.reflectedPod);
  const reflect = (podIP: string): ReflectionConfig => ({
    to: findPod(topology, roles.client).cluster.id,
    fromPeer: reflected.cluster.id,
    podIP,
  });
  const real = reflect(reflected.pod.ip);
  const real6 = reflect(reflected.pod.secondaryIp!);
  const reflections = benchReflections(n, [real, real6], reflected.cluster.podCIDR);
  await reconfigureController(runDir, roles.hub, (config) => ({ ...config, reflections }));
  const started = Date.now();
  const state = await openLabState(runDir, topology);
  try {
    for (;;) {
      const states = await readLabState(topology, state);
      const hub = states.get(roles.hub)!;
      const hubGatewaySpec = hub.nodes.get(roles.hubGateway)?.spec;
      const mappings = hubGatewaySpec?.natMappings.length ?? 0;
      const gaps = [...convergenceGaps(topology, states), ...(mappings === n ? [] : [`${roles.hubGateway}: ${mappings}/${n} NatMappings`])];
      const dialledFor = (r: ReflectionConfig) => hub.reflections.find((x) => x.podIP === r.podIP && x.to === r.to)?.address;
      const [dialled, dialled6] = [dialledFor(real), dialledFor(real6)];
      if (gaps.length === 0 && dialled && dialled6 && hubGatewaySpec) {
        const views = Object.fromEntries(
          [...states].map(([id, s]) => [id, { spec: [...s.nodes.values()][0]!.spec!, reflections: s.reflections, imports: s.imports }]),
        );
        say(`${n} NatMappings applied in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        return { views, hubGatewaySpec, dialled, dialled6 };
      }
      if (Date.now() - started > timeoutMs)
        throw new Error(`${n} NatMappings not applied in ${timeoutMs / 1000} s: ${gaps.slice(0, 3).join('; ')}`);
      await sleep(500);
    }
  } finally {
    await state.close();
  }
}
