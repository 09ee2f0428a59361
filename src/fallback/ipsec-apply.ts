/**
 * Installs an IPsec plan (ipsec-plan.ts) by reconciling: read `ip xfrm state` and `ip xfrm policy`, keep
 * only Strait's entries (reqid 0x5354xxxx), diff with the plan and apply the difference through
 * `ip -batch -`, so keys travel on stdin and never in a process argument or a CommandError.
 *
 * `ip` exits at the first xfrm command that fails, even with -force, having applied the lines before it;
 * so every step reads the kernel back to learn what it changed. Order: states, then policies, then
 * removals (policies before their states), so a policy never exists without its states; a failure undoes
 * what this run added.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../log';
import { CommandError, run } from '../kernel/command';
import { StateError } from '../errors';
import { aeadAlgorithm, aeadIcvBits } from './ipsec-keys';
import { type IpsecPlan, type XfrmPolicySpec, type XfrmStateSpec, isStraitReqid } from './ipsec-plan';

/** A state as read from the kernel. The key is kept only as a digest, so a dump cannot leak it onwards. */
export interface KernelState {
  src: string;
  dst: string;
  proto: string;
  spi: number;
  reqid: number;
  mode: string;
  /** 0 for none. */
  ifId: number;
  /** `algorithm icv` of the AEAD, or '' for none. */
  aead: string;
  keyDigest: string;
}

export interface KernelPolicy {
  dir: string;
  /** The selector as printed (`src A dst B` and any ports, protocol or device), and any mark. */
  selector: string[];
  mark: string[];
  /** 0 for none; part of the policy's identity, like the selector. */
  ifId: number;
  /** One entry per template: `src dst proto reqid mode`. */
  tmpls: { src: string; dst: string; proto: string; reqid: number; mode: string }[];
}

export interface XfrmTables {
  states: KernelState[];
  policies: KernelPolicy[];
}

const digest = (hex: string) => createHash('sha256').update(hex.toLowerCase()).digest('hex');

/** Entries start at an unindented line; indented lines continue them. */
function entries(text: string): string[][] {
  const out: string[][] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (!/^\s/.test(line) || out.length === 0) out.push([]);
    out[out.length - 1]!.push(line);
  }
  return out;
}

const after = (tokens: string[], word: string, from = 0) => {
  const i = tokens.indexOf(word, from);
  return i < 0 ? undefined : tokens[i + 1];
};

/** `if_id` is printed in hex on a line of its own or after other attributes, depending on the entry. */
const ifIdOf = (lines: string[]) => Number(/\bif_id (0x[0-9a-f]+|\d+)/i.exec(lines.join(' '))?.[1] ?? 0);

export function parseStates(text: string): KernelState[] {
  return entries(text).map((lines) => {
    const head = lines[0]!.trim().split(/\s+/);
    const body = lines.slice(1).join(' ').trim().split(/\s+/);
    const aeadAt = body.indexOf('aead');
    return {
      src: after(head, 'src') ?? '',
      dst: after(head, 'dst') ?? '',
      proto: after(body, 'proto') ?? '',
      spi: Number(after(body, 'spi') ?? 0),
      reqid: Number(after(body, 'reqid') ?? 0),
      mode: after(body, 'mode') ?? '',
      ifId: ifIdOf(lines),
      aead: aeadAt < 0 ? '' : `${body[aeadAt + 1]} ${body[aeadAt + 3]}`,
      // ip prints the key as 0x<hex>; the plan's key is digested as bare hex (stateMatches).
      keyDigest: aeadAt < 0 ? '' : digest((body[aeadAt + 2] ?? '').replace(/^0x/i, '')),
    };
  });
}

export function parsePolicies(text: string): KernelPolicy[] {
  return entries(text).map((lines) => {
    const second = lines[1]?.trim().split(/\s+/) ?? [];
    const mark = lines.map((l) => /^\s*mark (\d+)\/(0x[0-9a-f]+)/.exec(l)).find((m) => m);
    const tmpls: KernelPolicy['tmpls'] = [];
    lines.forEach((line, i) => {
      const t = line.trim().split(/\s+/);
      if (t[0] !== 'tmpl') return;
      const next = lines[i + 1]?.trim().split(/\s+/) ?? [];
      tmpls.push({ src: after(t, 'src') ?? '', dst: after(t, 'dst') ?? '', proto: after(next, 'proto') ?? '', reqid: Number(after(next, 'reqid') ?? 0), mode: after(next, 'mode') ?? '' });
    });
    return {
      // `socket in` policies belong to sockets, not to anyone's configuration; the direction word follows.
      dir: second[0] === 'dir' || second[0] === 'socket' ? `${second[0] === 'socket' ? 'socket ' : ''}${second[1]}` : '',
      selector: lines[0]!.trim().split(/\s+/),
      mark: mark ? ['mark', mark[1]!, 'mask', mark[2]!] : [],
      ifId: ifIdOf(lines),
      tmpls,
    };
  });
}

export const policyIsStrait = (p: KernelPolicy) => ['in', 'out', 'fwd'].includes(p.dir) && p.tmpls.some((t) => isStraitReqid(t.reqid));

export function readXfrm(netns?: string): XfrmTables {
  const ns = netns ? ['-n', netns] : [];
  // The state dump carries keys: it is parsed here and never logged or put in an error.
  return { states: parseStates(run(['ip', ...ns, 'xfrm', 'state'])), policies: parsePolicies(run(['ip', ...ns, 'xfrm', 'policy'])) };
}

const hex32 = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;
const stateId = (s: { dst: string; spi: number }) => `${s.dst} esp ${hex32(s.spi)}`;
const policyKey = (dir: string, selector: string[], mark: string[], ifId: number) => [dir, ...selector, ...mark, ...ifIdArgs(ifId)].join(' ');
const wantedKey = (p: XfrmPolicySpec) => policyKey(p.dir, ['src', p.src, 'dst', p.dst], [], p.ifId);
const actualKey = (p: KernelPolicy) => policyKey(p.dir, p.selector, p.mark, p.ifId);
const ifIdArgs = (ifId: number) => (ifId === 0 ? [] : ['if_id', hex32(ifId)]);

const stateMatches = (want: XfrmStateSpec, have: KernelState) =>
  have.src === want.src && have.proto === 'esp' && have.reqid === want.reqid && have.mode === 'tunnel' && have.ifId === want.ifId &&
  have.aead === `${aeadAlgorithm} ${aeadIcvBits}` && have.keyDigest === digest(want.key.reveal().toString('hex'));

const policyMatches = (want: XfrmPolicySpec, have: KernelPolicy) =>
  have.tmpls.length === 1 && have.tmpls[0]!.src === want.tmplSrc && have.tmpls[0]!.dst === want.tmplDst &&
  have.tmpls[0]!.proto === 'esp' && have.tmpls[0]!.reqid === want.reqid && have.tmpls[0]!.mode === 'tunnel';

const stateAdd = (s: XfrmStateSpec) =>
  `xfrm state add src ${s.src} dst ${s.dst} proto esp spi ${hex32(s.spi)} reqid ${hex32(s.reqid)} mode tunnel ` +
  `if_id ${hex32(s.ifId)} aead ${aeadAlgorithm} 0x${s.key.reveal().toString('hex')} ${aeadIcvBits}`;
const stateDelete = (s: { src: string; dst: string; spi: number }) => `xfrm state delete src ${s.src} dst ${s.dst} proto esp spi ${hex32(s.spi)}`;
const policyLine = (verb: 'add' | 'update', p: { dir: string; src: string; dst: string; tmplSrc: string; tmplDst: string; reqid: number; ifId: number }) =>
  [`xfrm policy ${verb} src ${p.src} dst ${p.dst} dir ${p.dir}`, ...ifIdArgs(p.ifId), `tmpl src ${p.tmplSrc} dst ${p.tmplDst} proto esp reqid ${hex32(p.reqid)} mode tunnel`].join(' ');
const policyDelete = (p: KernelPolicy) => `xfrm policy delete dir ${p.dir} ${[...p.selector, ...p.mark, ...ifIdArgs(p.ifId)].join(' ')}`;

/** Applying failed; the message names the peer and the entry, never key material. */
export class IpsecError extends Error {
  override readonly name = 'IpsecError';
  constructor(
    readonly peer: string,
    message: string,
  ) {
    super(message);
  }
}

/** ip's own message, with anything that looks like key material masked in case a future ip echoes it. */
function kernelReason(err: unknown): string {
  const text = err instanceof CommandError ? err.stderr : err instanceof Error ? err.message : String(err);
  const lines = text.split('\n').map((l) => l.trim().replace(/^Error:\s*/, '').replace(/\.$/, '')).filter((l) => l !== '');
  return lines.join('; ').replace(/0x[0-9a-f]{16,}/gi, '0x[redacted]') || 'no message';
}

const lacksEsp = (reason: string) => /AEAD algorithm not found|type not found|Protocol not supported/i.test(reason);

export interface ApplyOptions {
  netns?: string;
  logger?: Logger;
}

export interface ApplyResult {
  added: number;
  updated: number;
  removed: number;
}

/**
 * One `ip -batch` without per-line results: they would add nothing because ip stops at the first failed
 * xfrm command, and a refused line may hold a key, so it is never quoted.
 */
function batch(lines: string[], netns?: string): void {
  if (lines.length > 0) run(['ip', ...(netns ? ['-n', netns] : []), '-batch', '-', '-force'], lines.join('\n') + '\n');
}

/**
 * Removes the states and policies this run added and restores the policies it updated. Returns what to
 * add to the error if that failed too, so the first failure is still the one reported.
 */
function undo(netns: string | undefined, addedStates: XfrmStateSpec[], addedPolicies: XfrmPolicySpec[], updated: KernelPolicy[]): string {
  try {
    undoOrThrow(netns, addedStates, addedPolicies, updated);
    return '';
  } catch (err) {
    return `; undoing this run's changes failed too (${kernelReason(err)}), the next reconcile retries`;
  }
}

function undoOrThrow(netns: string | undefined, addedStates: XfrmStateSpec[], addedPolicies: XfrmPolicySpec[], updated: KernelPolicy[]): void {
  const now = readXfrm(netns);
  const presentPolicies = new Set(now.policies.map(actualKey));
  const presentStates = new Set(now.states.map(stateId));
  const lines = [
    ...updated.flatMap((p) => {
      const t = p.tmpls[0]!;
      return [policyLine('update', { dir: p.dir, src: p.selector[1]!, dst: p.selector[3]!, tmplSrc: t.src, tmplDst: t.dst, reqid: t.reqid, ifId: p.ifId })];
    }),
    ...addedPolicies.filter((p) => presentPolicies.has(wantedKey(p))).map((p) => [`xfrm policy delete dir ${p.dir} src ${p.src} dst ${p.dst}`, ...ifIdArgs(p.ifId)].join(' ')),
    ...addedStates.filter((s) => presentStates.has(stateId(s))).map(stateDelete),
  ];
  batch(lines, netns);
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
    const have = byStateId.get(stateId(s));
    if (have && !isStraitReqid(have.reqid)) {
      throw new StateError(`IPsec for peer ${s.peer}: an xfrm state dst ${s.dst} spi ${hex32(s.spi)} exists and is not Strait's (reqid ${hex32(have.reqid)}); remove it`);
    }
  }
  for (const p of plan.policies) {
    const have = byPolicyKey.get(wantedKey(p));
    if (have && !policyIsStrait(have)) {
      throw new StateError(`IPsec for peer ${p.peer}: an xfrm policy dir ${p.dir} src ${p.src} dst ${p.dst} exists and is not Strait's; remove it`);
    }
  }

  const newStates = plan.states.filter((s) => {
    const have = byStateId.get(stateId(s));
    return !have || !stateMatches(s, have);
  });
  const replacedStates = newStates.flatMap((s) => byStateId.get(stateId(s)) ?? []);
  const newPolicies = plan.policies.filter((p) => !byPolicyKey.has(wantedKey(p)));
  const changedPolicies = plan.policies.filter((p) => {
    const have = byPolicyKey.get(wantedKey(p));
    return have !== undefined && !policyMatches(p, have);
  });
  const wantedStates = new Set(plan.states.map(stateId));
  const wantedPolicies = new Set(plan.policies.map(wantedKey));
  const staleStates = oursStates.filter((s) => !wantedStates.has(stateId(s)));
  const stalePolicies = oursPolicies.filter((p) => !wantedPolicies.has(actualKey(p)));

  try {
    // A state whose key changed under the same SPI (only by hand) is replaced; its old key cannot be restored.
    batch([...replacedStates.map(stateDelete), ...newStates.map(stateAdd)], netns);
  } catch (err) {
    const present = new Set(readXfrm(netns).states.map(stateId));
    const failed = newStates.find((s) => !present.has(stateId(s))) ?? newStates[0]!;
    const undone = undo(netns, newStates, [], []);
    const reason = kernelReason(err);
    const hint = lacksEsp(reason) ? '; this kernel lacks ESP (xfrm ESP with AES-GCM), see `strait probe --reasons`' : '';
    throw new IpsecError(failed.peer, `IPsec for peer ${failed.peer}: cannot install the ESP state ${failed.src} -> ${failed.dst} spi ${hex32(failed.spi)}: ${reason}${hint}${undone}`);
  }

  try {
    batch([...changedPolicies.map((p) => policyLine('update', p)), ...newPolicies.map((p) => policyLine('add', p))], netns);
  } catch (err) {
    const present = new Set(readXfrm(netns).policies.map(actualKey));
    const failed = newPolicies.find((p) => !present.has(wantedKey(p))) ?? changedPolicies[0] ?? newPolicies[0]!;
    const undone = undo(netns, newStates, newPolicies, changedPolicies.map((p) => byPolicyKey.get(wantedKey(p))!));
    throw new IpsecError(failed.peer, `IPsec for peer ${failed.peer}: cannot install the xfrm policy dir ${failed.dir} src ${failed.src} dst ${failed.dst}: ${kernelReason(err)}${undone}`);
  }

  try {
    batch([...stalePolicies.map(policyDelete), ...staleStates.map(stateDelete)], netns);
  } catch (err) {
    // What is left is Strait's and goes at the next reconcile; policies went first, so none lacks its state.
    throw new IpsecError('', `IPsec: cannot remove stale xfrm entries: ${kernelReason(err)}`);
  }

  const result = { added: newStates.length - replacedStates.length + newPolicies.length, updated: replacedStates.length + changedPolicies.length, removed: staleStates.length + stalePolicies.length };
  if (result.added + result.updated + result.removed > 0) logger?.info({ ipsec: result, netns }, 'IPsec xfrm entries reconciled');
  return result;
}

/**
 * Removes every Strait xfrm entry (encryption off, a worker, cleanup): how many went. A kernel without
 * xfrm at all (ip cannot even list) holds none of them.
 */
export function removeIpsec(options: ApplyOptions = {}): number {
  try {
    return applyIpsec({ states: [], policies: [] }, options).removed;
  } catch (err) {
    if (err instanceof CommandError) return 0;
    throw err;
  }
}
