/**
 * The claims as this service knows them: the informer's cache overlaid with its own writes until the
 * informer has seen them, so an address this service claimed a moment ago is taken for its next pick
 * (and one it released is not held), however late the watch event comes.
 */
import { type Claim, readClaim } from '../claim';
import type { Informer } from '../../k8s/informer';
import type { IPClaimObject } from './cluster-view';

export class ClaimIndex {
  /** Each informer object parsed once (the informer replaces the object on every change). */
  private readonly parsed = new WeakMap<IPClaimObject, Claim>();
  /** name → our last write (undefined: deleted by us), with the resourceVersion it had. */
  private readonly local = new Map<string, { claim?: Claim; resourceVersion: number }>();

  constructor(private readonly informer: Pick<Informer<IPClaimObject>, 'onChange' | 'get' | 'list'>) {
    informer.onChange((name) => {
      const mine = this.local.get(name);
      if (!mine) return;
      const seen = informer.get(name);
      const seenVersion = seen ? Number(seen.metadata?.resourceVersion ?? 0) : undefined;
      // The watch caught up with our write (or went past it: someone wrote after us).
      if (
        mine.claim
          ? seenVersion !== undefined && seenVersion >= mine.resourceVersion
          : seenVersion === undefined || seenVersion > mine.resourceVersion
      )
        this.local.delete(name);
    });
  }

  record(claim: Claim): void {
    this.local.set(claim.name, { claim, resourceVersion: Number(claim.resourceVersion) });
  }

  forget(claim: Claim): void {
    this.local.set(claim.name, { resourceVersion: Number(claim.resourceVersion) });
  }

  /**
   * Our last write of `name`, unless the informer holds a newer version of the name: a write after ours, or
   * the address claimed again after the claim we released (a release answered 404 or 409 late, a garbage
   * collection pass's stale copy), which our older entry must not hide.
   */
  private mine(name: string): { claim?: Claim; resourceVersion: number } | undefined {
    const mine = this.local.get(name);
    if (!mine) return undefined;
    const seen = this.informer.get(name);
    return seen && Number(seen.metadata?.resourceVersion ?? 0) > mine.resourceVersion ? undefined : mine;
  }

  get(name: string): Claim | undefined {
    const mine = this.mine(name);
    if (mine) return mine.claim;
    const object = this.informer.get(name);
    return object ? this.read(object) : undefined;
  }

  private read(object: IPClaimObject): Claim {
    let claim = this.parsed.get(object);
    if (!claim) {
      claim = readClaim(object);
      this.parsed.set(object, claim);
    }
    return claim;
  }

  all(): Claim[] {
    const out: Claim[] = [];
    for (const object of this.informer.list()) {
      const name = object.metadata?.name ?? '';
      if (!this.mine(name)) out.push(this.read(object));
    }
    for (const [name, entry] of this.local) if (entry.claim && this.mine(name) === entry) out.push(entry.claim);
    return out;
  }

  ofAttachment(containerId: string, ifname: string, network: string): Claim[] {
    return this.all().filter((c) => c.containerID === containerId && c.ifname === ifname && c.network === network && !c.conflict);
  }

  ofPod(namespace: string, name: string, ifname: string, network: string): Claim[] {
    return this.all().filter(
      (c) => c.podNamespace === namespace && c.podName === name && c.ifname === ifname && c.network === network && !c.conflict,
    );
  }
}
