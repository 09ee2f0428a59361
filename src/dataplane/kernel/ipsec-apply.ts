/**
 * Installs an IPsec plan (ipsec-plan.ts) by reconciling: read the xfrm states and policies through xfrm
 * netlink (kernel/xfrm.ts), keep only Strait's entries (reqid 0x5354xxxx), diff with the plan and apply
 * the difference as batches of changes with one result per change. Keys travel only inside the netlink
 * messages: no process is started, and a state read back carries only a digest of its key.
 *
 * Order: states, then policies, then removals (policies before their states), so a policy never exists
 * without its states; a failure undoes what this run added.
 *
 * Every state is installed with XFRM_STATE_AF_UNSPEC (`ip xfrm state ... flag af-unspec`): without it the
 * kernel gives the state's empty selector the family of its (IPv4) addresses, and the tunnel then carries
 * IPv4 inner packets only (an IPv6 one finds no state on the way out, XfrmOutNoStates, and is dropped on
 * the way in, XfrmInStateMismatch). With it one pair of states carries both families, and the policies alone say which
 * prefixes of which family are encrypted. A state read back without the flag (an earlier release's) is
 * replaced once, with the same SPI and key.
 */
import type { Logger } from '../../log';
import { NetlinkError, isNativeError } from '../../native/error';
import { StateError } from '../../errors';
import {
  type XfrmChange,
  type XfrmPolicy,
  type XfrmResult,
  type XfrmState,
  applyXfrm,
  dumpXfrmPolicies,
  dumpXfrmStates,
  keyDigest,
  xfrmDir,
  xfrmMode,
  xfrmProto,
} from '../../kernel/xfrm';
import { aeadAlgorithm, aeadIcvBits } from './ipsec-keys';
import { type IpsecPlan, type XfrmPolicySpec, type XfrmStateSpec, isStraitReqid } from './ipsec-plan';

interface XfrmTables {
  states: XfrmState[];
  policies: XfrmPolicy[];
}

/** Strait's policies: in, out or fwd (not a socket's) with a template of a Strait reqid. */
const policyIsStrait = (p: XfrmPolicy) => p.dir <= xfrmDir.fwd && p.tmpls.some((t) => isStraitReqid(t.reqid));

const readXfrm = (netns?: string): XfrmTables => ({ states: dumpXfrmStates(netns), policies: dumpXfrmPolicies(netns) });

const hex32 = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;
const stateId = (s: { dst: string; proto: number; spi: number }) => `${s.dst} ${s.proto} ${hex32(s.spi)}`;
const wantedStateId = (s: XfrmStateSpec) => stateId({ ...s, proto: xfrmProto.esp });
/** A policy's identity: direction, the whole selector, mark and if_id. */
const actualKey = (p: XfrmPolicy) =>
  [p.dir, p.src, p.dst, p.proto, p.sport, p.dport, p.ifindex, p.mark?.value ?? 0, p.mark?.mask ?? 0, p.ifId].join(' ');
const wantedKey = (p: XfrmPolicySpec) => [xfrmDir[p.dir], p.src, p.dst, 0, 0, 0, 0, 0, 0, p.ifId].join(' ');

const stateMatches = (want: XfrmStateSpec, have: XfrmState) =>
  have.src === want.src &&
  have.proto === xfrmProto.esp &&
  have.reqid === want.reqid &&
  have.mode === xfrmMode.tunnel &&
  have.ifId === want.ifId &&
  have.afUnspec &&
  have.aead?.name === aeadAlgorithm &&
  have.aead.icvBits === aeadIcvBits &&
  have.keyDigest === keyDigest(want.key.reveal());

const policyMatches = (want: XfrmPolicySpec, have: XfrmPolicy) =>
  have.tmpls.length === 1 &&
  have.tmpls[0]!.src === want.tmplSrc &&
  have.tmpls[0]!.dst === want.tmplDst &&
  have.tmpls[0]!.proto === xfrmProto.esp &&
  have.tmpls[0]!.reqid === want.reqid &&
  have.tmpls[0]!.mode === xfrmMode.tunnel;

const stateAdd = (s: XfrmStateSpec): XfrmChange => ({
  kind: 'state',
  op: 'add',
  src: s.src,
  dst: s.dst,
  spi: s.spi,
  reqid: s.reqid,
  ifId: s.ifId,
  aead: aeadAlgorithm,
  icvBits: aeadIcvBits,
  key: s.key.reveal(),
  afUnspec: true,
});
const stateDelete = (s: { src: string; dst: string; spi: number }): XfrmChange => ({
  kind: 'state',
  op: 'del',
  src: s.src,
  dst: s.dst,
  spi: s.spi,
});
const policyChange = (op: 'add' | 'update', p: XfrmPolicySpec): XfrmChange => ({
  kind: 'policy',
  op,
  dir: xfrmDir[p.dir],
  src: p.src,
  dst: p.dst,
  ifId: p.ifId,
  tmplSrc: p.tmplSrc,
  tmplDst: p.tmplDst,
  reqid: p.reqid,
});
/** Puts back a policy of Strait's shape (a plain selector, one template) as it was read. */
const policyRestore = (p: XfrmPolicy): XfrmChange => ({
  kind: 'policy',
  op: 'update',
  dir: p.dir,
  src: p.src,
  dst: p.dst,
  ifId: p.ifId,
  tmplSrc: p.tmpls[0]!.src,
  tmplDst: p.tmpls[0]!.dst,
  reqid: p.tmpls[0]!.reqid,
});
const policyDelete = (p: XfrmPolicy): XfrmChange => ({
  kind: 'policy',
  op: 'del',
  dir: p.dir,
  index: p.index,
  ifId: p.ifId,
  ...(p.mark ? { mark: p.mark } : {}),
});

/** Applies a batch; the key copies the state changes hold are wiped once the kernel has them. */
function apply(changes: XfrmChange[], netns?: string): XfrmResult[] {
  try {
    return applyXfrm(changes, netns);
  } finally {
    for (const c of changes) if (c.kind === 'state' && c.op === 'add') c.key.fill(0);
  }
}

/** Applying failed; the message names the peer and the entry, never key material. */
export class IpsecError extends Error {
  override readonly name = 'IpsecError';
  constructor(
    readonly peer: string,
    message: string,
    /** The kernel's refusal (a NetlinkError with its errno and code), when there was one. */
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/** The kernel's reason for a refused change: its errno and message, never key material (the operation names none). */
const kernelReason = (err: unknown): string =>
  isNativeError(err) ? err.message.replace(`${err.operation} failed: `, '') : err instanceof Error ? err.message : String(err);

/** No xfrm ESP or no AES-GCM: the kernel knows no such protocol or algorithm. */
const lacksEsp = (err: unknown) => err instanceof NetlinkError && (err.code === 'ENOSYS' || err.code === 'EPROTONOSUPPORT');

export interface ApplyOptions {
  netns?: string;
  logger?: Logger;
}

export interface ApplyResult {
  added: number;
  updated: number;
  removed: number;
}

/** The first refused change of a batch, with the index of its change. */
function firstFailure(results: XfrmResult[]): { index: number; error: unknown } | undefined {
  const index = results.findIndex((r) => !r.ok);
  const r = results[index];
  return r && !r.ok ? { index, error: r.error } : undefined;
}

/**
 * Removes the states and policies this run added and restores the policies it updated. Returns what to
 * add to the error if that failed too, so the first failure is still the one reported.
 */
function undo(netns: string | undefined, addedStates: XfrmStateSpec[], addedPolicies: XfrmPolicySpec[], updated: XfrmPolicy[]): string {
  try {
    // A policy is deleted by the index the kernel gave it: read them back.
    const added = new Set(addedPolicies.map(wantedKey));
    const policies = addedPolicies.length === 0 ? [] : dumpXfrmPolicies(netns).filter((p) => added.has(actualKey(p)));
    const failed = firstFailure(
      apply([...updated.map(policyRestore), ...policies.map(policyDelete), ...addedStates.map(stateDelete)], netns),
    );
    return failed ? `; undoing this run's changes failed too (${kernelReason(failed.error)}), the next reconcile retries` : '';
  } catch (err) {
    return `; undoing this run's changes failed too (${kernelReason(err)}), the next reconcile retries`;
  }
}

export function applyIpsec(plan: IpsecPlan, options: ApplyOptions = {}): ApplyResult {
  const { netns, logger } = options;
  const before = readXfrm(netns);
  const oursStates = before.states.filter((s) => isStraitReqid(s.reqid));
  const oursPolicies = before.policies.filter(policyIsStrait);

  // Entries of others that sit where ours must go: refuse before changing anything.
  const byStateId = new Map(before.states.map((s) => [stateId(s), s]));
  const byPolicyKey = new Map(before.policies.map((p) => [actualKey(p), p]));
  for (const s of plan.states) {
    const have = byStateId.get(wantedStateId(s));
    if (have && !isStraitReqid(have.reqid)) {
      throw new StateError(
        `IPsec for peer ${s.peer}: an xfrm state dst ${s.dst} spi ${hex32(s.spi)} exists and is not Strait's (reqid ${hex32(have.reqid)}); remove it`,
      );
    }
  }
  for (const p of plan.policies) {
    const have = byPolicyKey.get(wantedKey(p));
    if (have && !policyIsStrait(have)) {
      throw new StateError(
        `IPsec for peer ${p.peer}: an xfrm policy dir ${p.dir} src ${p.src} dst ${p.dst} exists and is not Strait's; remove it`,
      );
    }
  }

  const newStates = plan.states.filter((s) => {
    const have = byStateId.get(wantedStateId(s));
    return !have || !stateMatches(s, have);
  });
  const replacedStates = newStates.flatMap((s) => byStateId.get(wantedStateId(s)) ?? []);
  const newPolicies = plan.policies.filter((p) => !byPolicyKey.has(wantedKey(p)));
  const changedPolicies = plan.policies.filter((p) => {
    const have = byPolicyKey.get(wantedKey(p));
    return have !== undefined && !policyMatches(p, have);
  });
  const wantedStates = new Set(plan.states.map(wantedStateId));
  const wantedPolicies = new Set(plan.policies.map(wantedKey));
  const staleStates = oursStates.filter((s) => !wantedStates.has(stateId(s)));
  const stalePolicies = oursPolicies.filter((p) => !wantedPolicies.has(actualKey(p)));

  // A state whose key changed under the same SPI (only by hand), or that lacks the flag af-unspec (an
  // earlier release's), is replaced: the kernel cannot change a state's key or flags in place
  // (XFRM_MSG_UPDSA keeps them), and the old key cannot be restored.
  const stateResults = apply([...replacedStates.map(stateDelete), ...newStates.map(stateAdd)], netns);
  const addResults = stateResults.slice(replacedStates.length);
  const stateFailed = firstFailure(addResults);
  if (stateFailed) {
    const failed = newStates[stateFailed.index]!;
    const undone = undo(
      netns,
      newStates.filter((_, i) => addResults[i]!.ok),
      [],
      [],
    );
    const hint = lacksEsp(stateFailed.error) ? '; this kernel lacks ESP (xfrm ESP with AES-GCM), see `strait probe --reasons`' : '';
    throw new IpsecError(
      failed.peer,
      `IPsec for peer ${failed.peer}: cannot install the ESP state ${failed.src} -> ${failed.dst} spi ${hex32(failed.spi)}: ${kernelReason(stateFailed.error)}${hint}${undone}`,
      stateFailed.error,
    );
  }

  const policies = [...changedPolicies, ...newPolicies];
  const policyResults = apply(
    [...changedPolicies.map((p) => policyChange('update', p)), ...newPolicies.map((p) => policyChange('add', p))],
    netns,
  );
  const policyFailed = firstFailure(policyResults);
  if (policyFailed) {
    const failed = policies[policyFailed.index]!;
    const updated = changedPolicies.filter((_, i) => policyResults[i]!.ok).map((p) => byPolicyKey.get(wantedKey(p))!);
    const added = newPolicies.filter((_, i) => policyResults[changedPolicies.length + i]!.ok);
    const undone = undo(netns, newStates, added, updated);
    throw new IpsecError(
      failed.peer,
      `IPsec for peer ${failed.peer}: cannot install the xfrm policy dir ${failed.dir} src ${failed.src} dst ${failed.dst}: ${kernelReason(policyFailed.error)}${undone}`,
      policyFailed.error,
    );
  }

  const removeFailed = firstFailure(apply([...stalePolicies.map(policyDelete), ...staleStates.map(stateDelete)], netns));
  if (removeFailed) {
    // What is left is Strait's and goes at the next reconcile; policies went first, so none lacks its state.
    throw new IpsecError('', `IPsec: cannot remove stale xfrm entries: ${kernelReason(removeFailed.error)}`, removeFailed.error);
  }

  const result = {
    added: newStates.length - replacedStates.length + newPolicies.length,
    updated: replacedStates.length + changedPolicies.length,
    removed: staleStates.length + stalePolicies.length,
  };
  if (result.added + result.updated + result.removed > 0) logger?.info({ ipsec: result, netns }, 'IPsec xfrm entries reconciled');
  return result;
}

/**
 * Removes every Strait xfrm entry (encryption off, a worker, cleanup): how many went. A kernel without
 * xfrm netlink at all (no such protocol) holds none of them.
 */
export function removeIpsec(options: ApplyOptions = {}): number {
  try {
    return applyIpsec({ states: [], policies: [] }, options).removed;
  } catch (err) {
    if (err instanceof NetlinkError && err.code === 'EPROTONOSUPPORT') return 0;
    throw err;
  }
}
