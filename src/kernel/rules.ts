/**
 * Strait's IPv4 and IPv6 policy rules as desired state: Strait owns the priorities 18952..18959 (several rules may
 * share one: a rule is its priority and its selectors). Only rules at those priorities are read, so no
 * other rule is ever changed. The kernel cannot replace a rule in place, so a rule whose table changed
 * is deleted and added again in the same batch.
 */
import { InputError } from '../errors';
import { type Changes, type Diff, type Identity, applyDiff, diffByIdentity } from './desired-state';
import { integer, ipPrefix, linkName } from './kernel-values';
import { type NativeRule, type NetlinkChange, applyNetlink, dumpRules } from './rtnetlink';

const straitRulePriorities = { first: 18952, last: 18959 } as const;

export interface Rule {
  /** IPv6 rules are the kernel's other list: 6, or implied by an IPv6 `from` or `to`; else IPv4. */
  family?: 6;
  priority: number;
  /** Source network; any source when absent. */
  from?: string;
  /** Destination network; any destination when absent. */
  to?: string;
  /** Incoming interface; any when absent. */
  iif?: string;
  /** Firewall mark to match, with `fwmask` (all 32 bits when absent). */
  fwmark?: number;
  fwmask?: number;
  table: number;
}

/** A rule as read, with the selectors this model does not describe (e.g. iif): such a rule is rewritten. */
export interface KernelRule extends Rule {
  unmodelled?: string[];
}

export function rule(value: Rule, field = 'rule'): Rule {
  const checked: Rule = {
    priority: integer(`${field}.priority`, value.priority, straitRulePriorities.first, straitRulePriorities.last),
    table: integer(`${field}.table`, value.table, 1, 2 ** 32 - 1),
  };
  // 0.0.0.0/0 matches everything: the kernel shows it as no selector ("all"), and so does the model.
  const from = value.from === undefined ? undefined : ipPrefix(`${field}.from`, value.from);
  const to = value.to === undefined ? undefined : ipPrefix(`${field}.to`, value.to);
  const ipv6 = value.family === 6 || [from, to].some((p) => p?.includes(':'));
  if (value.family !== undefined && value.family !== 6)
    throw new InputError(`${field}.family`, value.family, 'the only family to name is 6 (IPv6)');
  for (const [key, prefix] of [
    ['from', from],
    ['to', to],
  ] as const)
    if (prefix !== undefined && prefix.includes(':') !== ipv6)
      throw new InputError(`${field}.${key}`, prefix, `must be of the rule's family (IPv${ipv6 ? 6 : 4})`);
  if (ipv6) checked.family = 6;
  if (from && !isAll(from)) checked.from = from;
  if (value.iif !== undefined) checked.iif = linkName(`${field}.iif`, value.iif);
  if (to && !isAll(to)) checked.to = to;
  if (value.fwmask !== undefined && value.fwmark === undefined)
    throw new InputError(`${field}.fwmask`, value.fwmask, 'a mask needs a fwmark');
  if (value.fwmark !== undefined) checked.fwmark = integer(`${field}.fwmark`, value.fwmark, 0, 2 ** 32 - 1);
  if (value.fwmask !== undefined && value.fwmask !== 0xffffffff) checked.fwmask = integer(`${field}.fwmask`, value.fwmask, 0, 2 ** 32 - 1);
  return checked;
}

const isAll = (prefix: string) => prefix === '0.0.0.0/0' || prefix === '::/0';

const selectors = (r: Rule): string[] => {
  const words = [...(r.family === 6 ? ['-6'] : []), 'priority', String(r.priority)];
  if (r.from) words.push('from', r.from);
  if (r.to) words.push('to', r.to);
  if (r.iif) words.push('iif', r.iif);
  if (r.fwmark !== undefined)
    words.push('fwmark', `0x${r.fwmark.toString(16)}${r.fwmask === undefined ? '' : `/0x${r.fwmask.toString(16)}`}`);
  return words;
};

// Several rules may share a priority (one per remote prefix): a rule is its priority and selectors.
export const ruleIdentity: Identity<KernelRule> = {
  key: (r) => selectors(r).join(' '),
  same: (a, b) => !a.unmodelled?.length && a.table === b.table,
};

// FR_ACT_TO_TBL: the action of a rule that looks up a table; FIB_RULE_INVERT: a `not` rule.
const actionToTable = 1;
const invertFlag = 0x2;

/**
 * Pure: the rules at Strait's priorities among the kernel's rules of one family; every other rule is
 * left out.
 */
export function rulesFromKernel(rules: readonly NativeRule[], family: 4 | 6 = 4): KernelRule[] {
  return rules
    .filter((r) => r.priority >= straitRulePriorities.first && r.priority <= straitRulePriorities.last)
    .map((r) => {
      // A rule of another action (unreachable) has table 0: on delete, any table.
      const table = r.action === actionToTable ? r.table : 0;
      const read: KernelRule = { ...(family === 6 ? { family } : {}), priority: r.priority, table };
      if (r.src && !isAll(r.src)) read.from = r.src;
      if (r.dst && !isAll(r.dst)) read.to = r.dst;
      if (r.iif) read.iif = r.iif;
      if (r.fwmark !== undefined) read.fwmark = r.fwmark;
      if (r.fwmask !== undefined && r.fwmask !== 0xffffffff) read.fwmask = r.fwmask;
      const unmodelled = [
        ...(r.action === actionToTable ? [] : [`action ${r.action}`]),
        ...(r.flags & invertFlag ? ['not'] : []),
        ...(r.tos ? ['tos'] : []),
        ...(r.oif ? ['oif'] : []),
        ...r.other.map((type) => `attribute ${type}`),
      ];
      if (unmodelled.length) read.unmodelled = unmodelled;
      return read;
    });
}

/** The IPv4 and IPv6 rules at Strait's priorities. */
const readRules = (netns?: string): KernelRule[] => [
  ...rulesFromKernel(dumpRules(netns, 4), 4),
  ...rulesFromKernel(dumpRules(netns, 6), 6),
];

/** Pure: the changes that make the rules at Strait's priorities exactly `desired` (validated). */
export function diffRules(current: readonly KernelRule[], desired: readonly Rule[]): Diff<KernelRule> {
  return diffByIdentity(
    current,
    desired.map((r, i) => rule(r, `desired[${i}]`)),
    ruleIdentity,
  );
}

const ruleChange = (op: 'add' | 'del', r: Rule): NetlinkChange => ({
  kind: 'rule',
  op,
  ...(r.family === 6 ? { family: 6 } : {}),
  priority: r.priority,
  ...(r.from ? { src: r.from } : {}),
  ...(r.to ? { dst: r.to } : {}),
  ...(r.iif ? { iif: r.iif } : {}),
  ...(r.fwmark === undefined ? {} : { fwmark: r.fwmark }),
  ...(r.fwmask === undefined ? {} : { fwmask: r.fwmask }),
  ...(r.table ? { table: r.table } : {}),
});

/** Makes the rules at priorities 18952..18959 exactly `desired`, in one batch of rtnetlink changes. */
export function reconcileRules(desired: readonly Rule[], netns?: string): Changes<KernelRule> {
  const diff = diffRules(readRules(netns), desired);
  return applyDiff(diff, {
    add: (r) => [ruleChange('add', r)],
    change: (from, to) => [...from.map((r) => ruleChange('del', r)), ruleChange('add', to)],
    remove: (r) => [ruleChange('del', r)],
    run: (changes) => applyNetlink(changes, netns),
  });
}
