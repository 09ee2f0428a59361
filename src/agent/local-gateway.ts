/**
 * The agent's side of local failover (docs/liveness.md): keeps the prober aimed at the spec's gateway
 * candidates (and, on a candidate, the peers' gateways), and turns each spec into the one this node
 * applies (liveness/local-gateway.ts), logging when its probes make it leave the published gateways and
 * when it follows them again.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from '../log';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import type { Verdict } from '../liveness/detection';
import { chosenGateways, gatewayProbeReport, probeTargets, withLocalGateway } from '../liveness/local-gateway';

/** What the agent needs of a prober (liveness/prober.ts). */
export interface GatewayProbes {
  setTargets(targets: ReadonlyMap<string, string>): void;
  verdicts(): ReadonlyMap<string, Verdict>;
}

export class LocalGateway {
  private last?: { spec: NodeDataplaneSpec; effective: NodeDataplaneSpec };

  constructor(
    private readonly probes: GatewayProbes,
    private readonly log: Logger,
  ) {}

  /** The spec to apply: `spec`, or `spec` with the gateways this node's probes chose. The same object while the choice holds. */
  effective(spec: NodeDataplaneSpec): NodeDataplaneSpec {
    if (this.last?.spec !== spec) this.probes.setTargets(probeTargets(spec));
    const verdicts = this.probes.verdicts();
    const effective = withLocalGateway(spec, verdicts);
    const chosen = chosenGateways(effective);
    const before = this.last && chosenGateways(this.last.effective);
    const last = this.last;
    if (last?.spec === spec && isDeepStrictEqual(before, chosen)) return last.effective;
    this.last = { spec, effective };
    const published = chosenGateways(spec);
    const detail = { published, chosen, verdicts: Object.fromEntries(verdicts) };
    if (effective !== spec) this.log.warn(detail, "gateways not answering this node's probes: sending through others");
    else if (last !== undefined && last.effective !== last.spec && isDeepStrictEqual(chosenGateways(last.spec), published))
      this.log.info(detail, 'the published gateways answer again: following them');
    return effective;
  }

  /** What this node reports of its probes of the cluster's other gateway candidates, for the spec in force. */
  report(): ReturnType<typeof gatewayProbeReport> {
    return this.last ? gatewayProbeReport(this.last.spec, this.probes.verdicts()) : [];
  }
}

export const localGateway = (probes: GatewayProbes | undefined, log: Logger): LocalGateway | undefined =>
  probes === undefined ? undefined : new LocalGateway(probes, log);
