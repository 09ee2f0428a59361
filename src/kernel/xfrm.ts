/**
 * IPsec states and policies through xfrm netlink in the native addon, in a namespace by name or the
 * current one; as rtnetlink.ts, a batch of changes is one call with one result per change. A state's key
 * comes out of the kernel only here, and only as a SHA-256 digest: the bytes are digested and wiped.
 */
import { createHash } from 'node:crypto';
import type { NetlinkError } from '../native/error';
import { type NativeXfrmChange, type NativeXfrmPolicy, type NativeXfrmState, native } from '../native/binding';
import { netnsPath } from './netns';

export type XfrmChange = NativeXfrmChange;
export type XfrmResult = { ok: true } | { ok: false; error: NetlinkError };
export type XfrmPolicy = NativeXfrmPolicy;

/** A state as read from the kernel, its AEAD key only as a digest (keyDigest), so a dump cannot leak it onwards. */
export type XfrmState = Omit<NativeXfrmState, 'aead'> & {
  /** The AEAD's algorithm and ICV length in bits, absent for none. */
  aead?: Omit<NonNullable<NativeXfrmState['aead']>, 'key'>;
  /** sha256 of the AEAD key (salt included), '' for none. */
  keyDigest: string;
};

/** The numbers the kernel uses for what Strait installs. */
export const xfrmProto = { esp: 50 } as const;
export const xfrmMode = { tunnel: 1 } as const;
export const xfrmDir = { in: 0, out: 1, fwd: 2 } as const;

export const keyDigest = (key: Buffer): string => createHash('sha256').update(key).digest('hex');

const path = (netns?: string) => (netns === undefined ? null : netnsPath(netns));

export function dumpXfrmStates(netns?: string): XfrmState[] {
  return native()
    .xfrmStateDump(path(netns))
    .map(({ aead, ...s }) => {
      if (!aead) return { ...s, keyDigest: '' };
      const digest = keyDigest(aead.key);
      aead.key.fill(0);
      return { ...s, aead: { name: aead.name, icvBits: aead.icvBits }, keyDigest: digest };
    });
}

export const dumpXfrmPolicies = (netns?: string): XfrmPolicy[] => native().xfrmPolicyDump(path(netns));

/** Applies `changes` in order, in one crossing into the addon; one result per change. */
export function applyXfrm(changes: readonly XfrmChange[], netns?: string): XfrmResult[] {
  if (changes.length === 0) return [];
  return native()
    .xfrmApply(path(netns), changes)
    .map((error) => (error ? { ok: false, error } : { ok: true }));
}
