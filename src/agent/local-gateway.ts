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

/** What a metrics scrape reads of the local failover (strait_agent_gateway_*). */
export interface LocalGatewayState {
  /** Each probe target's verdict (a candidate by name, a peer's gateway as `peer:<address>`). */
  verdicts: ReadonlyMap<string, Verdict>;
  /** Whether this node sends through gateways other than the published ones now. */
  overriding: boolean;
  /** How often the gateways this node sends through changed since the agent started. */
  switches: number;
}

export class LocalGateway {
  private last?: { spec: NodeDataplaneSpec; effective: NodeDataplaneSpec };
  private switches = 0;

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
    if (last !== undefined && !isDeepStrictEqual(before, chosen)) this.switches += 1;
    this.last = { spec, effective };
    const published = chosenGateways(spec);
    const detail = { published, chosen, verdicts: Object.fromEntries(verdicts) };
    if (effective !== spec) this.log.warn(detail, "gateways not answering this node's probes: sending through others");
    else if (last !== undefined && last.effective !== last.spec && isDeepStrictEqual(chosenGateways(last.spec), published))
      this.log.info(detail, 'the published gateways answer again: following them');
    return effective;
  }

  metricsState(): LocalGatewayState {
    return {
      verdicts: this.probes.verdicts(),
      overriding: this.last !== undefined && this.last.effective !== this.last.spec,
      switches: this.switches,
    };
  }

  /** What this node reports of its probes of the cluster's other gateway candidates, for the spec in force. */
  report(): ReturnType<typeof gatewayProbeReport> {
    return this.last ? gatewayProbeReport(this.last.spec, this.probes.verdicts()) : [];
  }
}

export const localGateway = (probes: GatewayProbes | undefined, log: Logger): LocalGateway | undefined =>
  probes === undefined ? undefined : new LocalGateway(probes, log);
