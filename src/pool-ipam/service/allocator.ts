/**
 * The pool IPAM of one node: CNI ADD, CHECK, DEL and GC as the source document describes them.
 *
 * ADD: an attachment that has addresses already gets them again (a retried ADD), once its StraitEndpoint
 * records them (claims it does not record are an ADD that never finished: released, and the ADD is done
 * anew); a StatefulSet pod gets the addresses its earlier incarnation held (on any node); otherwise
 * candidates → filter → sort per family, and in the first usable pool the first free address from this
 * node's start position is claimed (an IPClaim named after it: a 409 means another node was first, and
 * the next is tried), then probed (a conflicting one is marked and the next tried), after the pool's
 * gateway answered. The StraitEndpoint records what was given; if anything fails, every claim the ADD made is
 * released before the error. Calls for one attachment run one at a time.
 */
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig, type V1OwnerReference, type V1Pod } from '@kubernetes/client-node';
import { endpointNames, ipPoolNames } from '../../api/resource-names';
import { InputError } from '../../errors';
import { apiStatus } from '../../k8s/api-errors';
import type { Logger } from '../../log';
import { type Ip, type IpFamily, addressBits, formatCidr, formatIp } from '../../net/cidr';
import type { Claim } from '../claim';
import { candidatePools } from '../candidates';
import { filterPools } from '../filter';
import { statefulSetGone } from '../gc-plan';
import { rangesOfAddresses } from '../ip-ranges';
import type { ApplicationRef, IpRange, Pool, PodContext } from '../model';
import { type AddressUse, pickAddress, poolSize, startOffset } from '../pick-address';
import { readPool, readReservedIps } from '../pool-objects';
import type { AddRequest, AddResponse, Attachment, CheckRequest, DelRequest, GcRequest, GcResponse } from '../protocol';
import { cniErrorCodes } from '../protocol';
import { IpamError } from '../ipam-error';
import { sortPools } from '../sort';
import { ApplicationPools } from './application-pools';
import { ClaimIndex } from './claim-index';
import { type ClaimFields, ClaimWriter, fieldsOf } from './claim-writer';
import type { PoolIpamView } from './cluster-view';
import { EndpointWriter } from './endpoint-writer';
import { PerKeySerializer } from './per-key-serializer';
import { probeFailure } from './probe-failure';

/** Sends the ARP/NDP probes (src/pool-ipam/address-probe.ts); a parameter so the service can run without the native addon in pure tests. */
export type AddressProber = (probe: { netns: string; ifname: string; address: Ip }) => Promise<{ answered: boolean; mac?: string }>;

export interface AllocatorOptions {
  kubeConfig: KubeConfig;
  view: PoolIpamView;
  node: string;
  probe: AddressProber;
  log: Logger;
  now?: () => number;
}

const familyKey = (family: IpFamily) => (family === 4 ? 'ipv4' : 'ipv6');

const attachmentKey = (a: Attachment & { network: string }) => JSON.stringify([a.network, a.containerId, a.ifname]);

/** The pod's controller as claims and StraitEndpoints record it (its namespace is the pod's). */
const ownerOf = (pod: PodContext) =>
  pod.owner ? { owner: { apiVersion: pod.owner.apiVersion, kind: pod.owner.kind, name: pod.owner.name, uid: pod.owner.uid } } : {};

export class Allocator {
  readonly claims: ClaimIndex;
  private readonly claimWriter: ClaimWriter;
  private readonly endpoints: EndpointWriter;
  private readonly applicationPools: ApplicationPools;
  private readonly core: CoreV1Api;
  private readonly apps: AppsV1Api;
  /** Addresses being claimed by an ADD in flight here, by family: not picked by another. */
  private readonly pending = new Map<string, Ip>();
  /** ADD, CHECK and DEL of one attachment, in turn. */
  readonly attachments = new PerKeySerializer();
  private readonly now: () => number;

  constructor(private readonly options: AllocatorOptions) {
    const custom = options.kubeConfig.makeApiClient(CustomObjectsApi);
    this.claims = new ClaimIndex(options.view.claims);
    this.claimWriter = new ClaimWriter(custom, this.claims);
    this.endpoints = new EndpointWriter(custom);
    this.core = options.kubeConfig.makeApiClient(CoreV1Api);
    this.apps = options.kubeConfig.makeApiClient(AppsV1Api);
    this.applicationPools = new ApplicationPools(options.kubeConfig, options.view, options.log);
    this.now = options.now ?? Date.now;
  }

  add(req: AddRequest): Promise<AddResponse> {
    return this.attachments.run(attachmentKey(req), () => this.addAttachment(req));
  }

  check(req: CheckRequest): Promise<void> {
    return this.attachments.run(attachmentKey(req), () => this.checkAttachment(req));
  }

  /** Releases the attachment's addresses (a StatefulSet pod's are kept for its next incarnation while its set wants it); nothing held is success. */
  del(req: DelRequest): Promise<string[]> {
    return this.attachments.run(attachmentKey(req), () => this.delAttachment(req));
  }

  private async addAttachment(req: AddRequest): Promise<AddResponse> {
    const again = this.claims.ofAttachment(req.containerId, req.ifname, req.network);
    if (again.length > 0) {
      const record = await this.record(again);
      if (record.recorded && record.containerID === req.containerId) return this.response(again);
      // Recorded for an earlier container: a StatefulSet pod's takeover that stopped before its StraitEndpoint (taken over again below).
      if (!record.recorded) {
        // Never given: an ADD stopped between its claims and its StraitEndpoint (the service killed, a release
        // that failed), maybe before its probes. Released, and this ADD starts anew.
        this.options.log.warn(
          { containerId: req.containerId, ifname: req.ifname, network: req.network, addresses: again.map((c) => formatIp(c.address)) },
          `claims of an ADD that did not finish (no ${endpointNames.kind} records them): released, allocating anew`,
        );
        for (const claim of again) await this.claimWriter.release(claim);
      }
    }
    const pod = await this.podContext(req);
    if (pod.owner?.kind === 'StatefulSet') {
      const held = this.claims.ofPod(pod.namespace, pod.name, req.ifname, req.network);
      if (held.length > 0) return this.takeOver(held, pod, req);
    }
    let candidates;
    try {
      candidates = candidatePools(pod, { ipv4: req.options.defaultIpv4Pools, ipv6: req.options.defaultIpv6Pools }, this.pools().valid);
      if (candidates.subnets) await this.applicationPools.ensure(pod, candidates.subnets);
    } catch (err) {
      if (err instanceof InputError)
        throw new IpamError(cniErrorCodes.invalidAnnotation, `pod ${pod.namespace}/${pod.name}: ${err.message}`);
      throw err;
    }
    if (candidates.ipv4.length === 0 && candidates.ipv6.length === 0) {
      throw new IpamError(
        cniErrorCodes.noCandidatePool,
        `no ${ipPoolNames.kind} for pod ${pod.namespace}/${pod.name} interface ${req.ifname}: no ipam.strait.io/subnet(s) or ipam.strait.io/ippool(s) annotation, no ipam.strait.io/default-ipv4-ippool or default-ipv6-ippool on namespace ${pod.namespace}, no default_ipv4_ippool or default_ipv6_ippool in network ${req.network}'s config, and no ${ipPoolNames.kind} with spec.default true`,
      );
    }
    const given: Claim[] = [];
    /** Every claim this ADD made and holds (not those it marked conflicting): what a failure releases. */
    const made: Claim[] = [];
    try {
      for (const family of [4, 6] as const) {
        const names = candidates[familyKey(family)];
        if (names.length > 0) given.push(await this.allocateFamily(family, names, pod, req, candidates.source, made));
      }
      await this.endpoints.attach(this.holder(pod), this.attachmentRecord(req, given));
    } catch (err) {
      await Promise.allSettled(made.map((c) => this.claimWriter.release(c)));
      throw err;
    }
    return this.response(given);
  }

  private async checkAttachment(req: CheckRequest): Promise<void> {
    const held = this.claims.ofAttachment(req.containerId, req.ifname, req.network);
    if (held.length === 0)
      throw new IpamError(
        cniErrorCodes.allocationMismatch,
        // Named by the CNI field that asks (CNI_CONTAINERID), as every refusal names its field.
        `CNI_CONTAINERID: no address is given to container ${req.containerId} interface ${req.ifname} on network ${req.network}`,
      );
    const other = held.find((c) => c.podNamespace !== req.podNamespace || c.podName !== req.podName);
    if (other)
      throw new IpamError(
        cniErrorCodes.allocationMismatch,
        `CNI_ARGS: address ${formatIp(other.address)} of container ${req.containerId} is given to pod ${other.podNamespace}/${other.podName}, not ${req.podNamespace}/${req.podName}`,
      );
    if (req.prevResultAddresses === undefined) return;
    // What the runtime holds from ADD (prevResult) must be what is given, no more, no less.
    const given = held.map((c) => formatIp(c.address)).sort();
    const holds = req.prevResultAddresses.map((a) => a.split('/')[0]!).sort();
    if (given.join() !== holds.join()) {
      throw new IpamError(
        cniErrorCodes.allocationMismatch,
        `prevResult.ips: ${holds.join(', ') || 'nothing'}, but container ${req.containerId} interface ${req.ifname} is given ${given.join(', ')}`,
      );
    }
  }

  private async delAttachment(req: DelRequest): Promise<string[]> {
    const held = this.claims.ofAttachment(req.containerId, req.ifname, req.network);
    if (held.length === 0 && req.podNamespace !== undefined && req.podName !== undefined) {
      // A DEL again after one that released the addresses but stopped before the StraitEndpoint (a crash).
      await this.endpoints.detachContainer(req.podNamespace, req.podName, req.network, req.ifname, req.containerId);
    }
    return this.releaseAttachment(held);
  }

  /** CNI GC: releases every allocation of the network on this node whose attachment the runtime does not list. */
  async gc(req: GcRequest): Promise<GcResponse> {
    const valid = new Set(req.validAttachments.map((a: Attachment) => `${a.containerId}/${a.ifname}`));
    const stale = this.claims
      .all()
      .filter(
        (c) =>
          c.network === req.network &&
          c.node === this.options.node &&
          !c.conflict &&
          c.containerID !== undefined &&
          !valid.has(`${c.containerID}/${c.ifname}`),
      );
    const byAttachment = new Map<string, Claim[]>();
    for (const c of stale)
      byAttachment.set(`${c.containerID}/${c.ifname}`, [...(byAttachment.get(`${c.containerID}/${c.ifname}`) ?? []), c]);
    const released: string[] = [];
    for (const claims of byAttachment.values()) released.push(...(await this.releaseAttachment(claims)));
    return { released };
  }

  /** Releases `claims` as garbage collection decided (the claim's uid guards against a newer claim of the address). */
  async release(claim: Claim): Promise<void> {
    await this.claimWriter.release(claim);
  }

  /** The application pools no application and no claim need any more (application-pools.ts collect). */
  collectApplicationPools(): Promise<string[]> {
    return this.applicationPools.collect(new Set(this.claims.all().map((c) => c.pool)));
  }

  async removeEndpoint(namespace: string, name: string, uid: string): Promise<void> {
    await this.endpoints.remove(namespace, name, uid);
  }

  /** Parsed pools by name, each with the resourceVersion it was parsed from (parsing is per change, not per ADD). */
  private readonly parsed = new Map<string, { resourceVersion: string; pool?: Pool; problem?: string }>();

  /** The pools as the model reads them; an invalid one is left out, with why. */
  pools(): { valid: Pool[]; invalid: Map<string, string> } {
    const valid: Pool[] = [];
    const invalid = new Map<string, string>();
    const seen = new Set<string>();
    for (const object of this.options.view.pools.list()) {
      const name = object.metadata?.name ?? '';
      const resourceVersion = object.metadata?.resourceVersion ?? '';
      seen.add(name);
      let entry = this.parsed.get(name);
      if (entry?.resourceVersion !== resourceVersion) {
        try {
          entry = { resourceVersion, pool: readPool(object) };
        } catch (err) {
          entry = { resourceVersion, problem: (err as Error).message };
        }
        this.parsed.set(name, entry);
      }
      if (entry.pool) valid.push(entry.pool);
      else invalid.set(name, entry.problem ?? '');
    }
    for (const name of this.parsed.keys()) if (!seen.has(name)) this.parsed.delete(name);
    return { valid, invalid };
  }

  private async releaseAttachment(held: Claim[]): Promise<string[]> {
    const released: string[] = [];
    const first = held[0];
    if (!first) return released;
    // Kept only once given: claims no StraitEndpoint records (an ADD that never finished) were maybe never probed.
    const keep =
      first.owner?.kind === 'StatefulSet' &&
      statefulSetGone(
        await this.statefulSets([`${first.podNamespace}/${first.owner.name}`]),
        first.podNamespace,
        first.owner.name,
        first.podName,
      ) === undefined &&
      (await this.record(held)).recorded;
    for (const claim of held) {
      if (keep) {
        const { containerID: _gone, ...rest } = fieldsOf(claim);
        await this.claimWriter.update(claim, rest as ClaimFields);
      } else {
        await this.claimWriter.release(claim);
        released.push(formatIp(claim.address));
      }
    }
    await this.endpoints.detach(first.podNamespace, first.podName, first.network, first.ifname, keep);
    return released;
  }

  /** Replicas per `namespace/name` of the StatefulSets named (one gone is absent). */
  async statefulSets(keys: readonly string[]): Promise<Map<string, number>> {
    const replicas = new Map<string, number>();
    for (const key of keys) {
      const [namespace, name] = key.split('/') as [string, string];
      try {
        replicas.set(key, (await this.apps.readNamespacedStatefulSet({ namespace, name })).spec?.replicas ?? 1);
      } catch (err) {
        if (apiStatus(err) !== 404) throw err;
      }
    }
    return replicas;
  }

  private async takeOver(held: Claim[], pod: PodContext, req: AddRequest): Promise<AddResponse> {
    const taken: Claim[] = [];
    for (const claim of held) {
      taken.push(
        await this.claimWriter.update(claim, fieldsOf(claim, { podUID: pod.uid, node: pod.nodeName, containerID: req.containerId })),
      );
    }
    await this.endpoints.attach(this.holder(pod), this.attachmentRecord(req, taken));
    this.options.log.info(
      { pod: `${pod.namespace}/${pod.name}`, addresses: taken.map((c) => formatIp(c.address)) },
      'a StatefulSet pod got its addresses back',
    );
    return this.response(taken);
  }

  /** Whether the StraitEndpoint of the claims' pod records their addresses on their interface, and for which container. */
  private async record(claims: Claim[]): Promise<{ recorded: boolean; containerID?: string }> {
    const { podNamespace, podName, network, ifname } = claims[0]!;
    const attachment = await this.endpoints.attachment(podNamespace, podName, network, ifname);
    const addresses = (list: string[]) => [...list].sort().join();
    const recorded =
      attachment !== undefined && addresses(attachment.ips.map((ip) => ip.address)) === addresses(claims.map((c) => formatIp(c.address)));
    return recorded && attachment.containerID !== undefined ? { recorded, containerID: attachment.containerID } : { recorded };
  }

  /** ARP/NDP from the pod's interface; a probe that cannot be sent fails the ADD saying whose input was wrong. */
  private async probe(req: AddRequest, address: Ip) {
    const target = { netns: req.netns, ifname: req.ifname, address };
    try {
      return await this.options.probe(target);
    } catch (err) {
      throw probeFailure(err, target);
    }
  }

  private async allocateFamily(
    family: IpFamily,
    names: readonly string[],
    pod: PodContext,
    req: AddRequest,
    source: string,
    made: Claim[],
  ): Promise<Claim> {
    const { valid, invalid } = this.pools();
    const byName = new Map(valid.map((p) => [p.name, p]));
    const reserved = readReservedIps(this.options.view.reserved.list());
    const use = this.addressUse(reserved);
    const { usable, rejected } = filterPools(family, names, byName, pod, use);
    const why = [...rejected.map((r) => `${r.pool}: ${invalid.get(r.pool) ?? r.reason}`)];
    for (const pool of sortPools(usable)) {
      const claim = await this.allocateFromPool(pool, pod, req, reserved, why, made);
      if (claim) return claim;
    }
    // Exhausted: some pool was usable but ran out while picking, or every rejection was for having no free address.
    const exhausted = usable.length > 0 || (rejected.length > 0 && rejected.every((r) => /no free address/.test(r.reason)));
    throw new IpamError(
      exhausted ? cniErrorCodes.poolsExhausted : cniErrorCodes.noUsablePool,
      `no IPv${family} address for pod ${pod.namespace}/${pod.name} from the pools of the ${source} rule (${names.join(', ')}): ${why.join('; ')}`,
    );
  }

  /** What no pick may take now: every claimed address (claims change under 409s, so read per pick), the reserved ones, and `skipped` besides those in flight here. */
  private addressUse(reserved: IpRange[], skipped: Ip[] = []): AddressUse {
    return {
      taken: rangesOfAddresses(this.claims.all().map((c) => c.address)),
      reserved,
      pending: rangesOfAddresses([...this.pending.values(), ...skipped]),
    };
  }

  /** A claimed, probed address of the pool (also in `made` from its creation), or undefined when it has none left (`why` says so). */
  private async allocateFromPool(
    pool: Pool,
    pod: PodContext,
    req: AddRequest,
    reserved: IpRange[],
    why: string[],
    made: Claim[],
  ): Promise<Claim | undefined> {
    const probeGateway = pool.detectGateway ?? req.options.detectGateway;
    if (probeGateway && pool.gateway) {
      const answer = await this.probe(req, pool.gateway);
      if (!answer.answered) {
        throw new IpamError(
          cniErrorCodes.gatewayUnreachable,
          `gateway ${formatIp(pool.gateway)} of ${ipPoolNames.kind} ${pool.name} did not answer ${pool.family === 4 ? 'ARP' : 'NDP'} probes from ${req.ifname} in ${req.netns} (3 tries, 100 ms each); set spec.detectGateway false on the pool or detect_gateway false in the CNI config if the network refuses probes`,
        );
      }
    }
    const probeAddress = pool.detectConflict ?? req.options.detectConflict;
    const start = startOffset(this.options.node, poolSize(pool));
    const skipped: Ip[] = [];
    let conflicts = 0;
    for (;;) {
      const address = pickAddress(pool, { ...this.addressUse(reserved, skipped), start });
      if (!address) {
        why.push(`${pool.name}: no free address${conflicts > 0 ? ` (${conflicts} answered by another host and marked)` : ''}`);
        return undefined;
      }
      const key = `${address.family}/${address.value}`;
      this.pending.set(key, address);
      try {
        const claim = await this.claimWriter.create(this.claimFields(pool, address, pod, req));
        if (!claim) {
          skipped.push(address);
          continue;
        }
        made.push(claim);
        if (!probeAddress) return claim;
        const answer = await this.probe(req, address);
        if (!answer.answered) return claim;
        conflicts++;
        await this.claimWriter.update(
          claim,
          fieldsOf(claim, { conflict: { ...(answer.mac ? { mac: answer.mac } : {}), detectedAt: this.now() } }),
        );
        // Held for nobody now, on purpose: garbage collection frees it, not this ADD's failure.
        made.splice(made.indexOf(claim), 1);
        this.options.log.warn(
          { pool: pool.name, address: formatIp(address), mac: answer.mac, pod: `${pod.namespace}/${pod.name}` },
          'another host answered for the address: marked as conflicting, trying the next',
        );
      } finally {
        this.pending.delete(key);
      }
    }
  }

  private claimFields(pool: Pool, address: Ip, pod: PodContext, req: AddRequest): ClaimFields {
    return {
      address,
      pool: pool.name,
      podNamespace: pod.namespace,
      podName: pod.name,
      podUID: pod.uid,
      node: pod.nodeName,
      network: req.network,
      ifname: req.ifname,
      containerID: req.containerId,
      ...ownerOf(pod),
    };
  }

  private holder(pod: PodContext) {
    return { namespace: pod.namespace, name: pod.name, podUID: pod.uid, node: pod.nodeName, ...ownerOf(pod) };
  }

  /** Each claim's address with what its pool hands out with it (IPv4 first); a pool gone since: the address alone. */
  private given(claims: Claim[]) {
    const pools = new Map(this.pools().valid.map((p) => [p.name, p]));
    return [...claims]
      .sort((a, b) => a.address.family - b.address.family)
      .map((c) => {
        const pool = pools.get(c.pool);
        const ip = {
          address: formatIp(c.address),
          prefixLength: pool?.subnet.prefix ?? addressBits(c.address.family),
          pool: c.pool,
          ...(pool?.gateway ? { gateway: formatIp(pool.gateway) } : {}),
          ...(pool?.vlan !== undefined ? { vlan: pool.vlan } : {}),
        };
        return { ip, routes: pool?.routes ?? [] };
      });
  }

  private attachmentRecord(req: AddRequest, claims: Claim[]) {
    return { network: req.network, ifname: req.ifname, containerID: req.containerId, ips: this.given(claims).map((g) => g.ip) };
  }

  private response(claims: Claim[]): AddResponse {
    const given = this.given(claims);
    return {
      ips: given.map(({ ip: { address, prefixLength, ...rest } }) => ({ address: `${address}/${prefixLength}`, ...rest })),
      routes: given.flatMap((g) => g.routes.map((r) => ({ dst: formatCidr(r.dst), ...(r.gw ? { gw: formatIp(r.gw) } : {}) }))),
    };
  }

  /** The pod of the CNI call, its namespace and node, as the rules read them. */
  private async podContext(req: AddRequest): Promise<PodContext> {
    let pod: V1Pod;
    try {
      pod = await this.core.readNamespacedPod({ namespace: req.podNamespace, name: req.podName });
    } catch (err) {
      if (apiStatus(err) === 404)
        throw new IpamError(
          cniErrorCodes.podNotFound,
          `pod ${req.podNamespace}/${req.podName} (K8S_POD_NAMESPACE, K8S_POD_NAME) is not in the API server`,
        );
      throw err;
    }
    const uid = pod.metadata?.uid ?? '';
    if (req.podUid !== undefined && req.podUid !== uid) {
      throw new IpamError(
        cniErrorCodes.podNotFound,
        `pod ${req.podNamespace}/${req.podName} has uid ${uid}, not K8S_POD_UID ${req.podUid} (a deleted incarnation)`,
      );
    }
    const nodeName = pod.spec?.nodeName ?? this.options.node;
    const namespace = await this.core.readNamespace({ name: req.podNamespace });
    const node = this.options.view.nodes.get(nodeName);
    const controller = (pod.metadata?.ownerReferences ?? []).find((o: V1OwnerReference) => o.controller);
    const owner: ApplicationRef | undefined = controller
      ? {
          apiVersion: controller.apiVersion,
          kind: controller.kind,
          namespace: req.podNamespace,
          name: controller.name,
          uid: controller.uid,
        }
      : undefined;
    return {
      namespace: req.podNamespace,
      name: req.podName,
      uid,
      labels: pod.metadata?.labels ?? {},
      annotations: pod.metadata?.annotations ?? {},
      nodeName,
      nodeLabels: node?.metadata?.labels ?? {},
      namespaceLabels: namespace.metadata?.labels ?? {},
      namespaceAnnotations: namespace.metadata?.annotations ?? {},
      ...(owner ? { owner } : {}),
      ifname: req.ifname,
      network: req.network,
    };
  }
}
