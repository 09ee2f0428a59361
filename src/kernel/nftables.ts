/**
 * nftables through libnftables in the agent's own process (the native addon), in a namespace by name
 * (/run/netns/NAME) or the current one: nft's JSON document runs as one transaction and a listing comes
 * back as nft's JSON, without starting an `nft` process; a document can also only be checked (`nft --check`:
 * the kernel validates it and throws it away). A refusal is an NftablesError: errno (EINVAL for a
 * document nft's parser refused) and nft's message.
 */
import { native } from '../native/binding';
import type { NftDocument } from './nft-json';
import { netnsPath } from './netns';

const path = (netns?: string) => (netns === undefined ? null : netnsPath(netns));

/** Runs nft's JSON command document as one transaction. */
export function runNft(document: NftDocument, netns?: string): void {
  // Serialised, it always parses as JSON: libnftables never falls back to reading it as nft syntax.
  native().nftRun(path(netns), JSON.stringify(document), true, false);
}

/** Validates nft's JSON command document with the kernel without applying it (`nft --check`). */
export function checkNft(document: NftDocument, netns?: string): void {
  native().nftRun(path(netns), JSON.stringify(document), true, true);
}

/** `nft -j list ruleset`: the whole ruleset as nft's JSON document. */
export function listRuleset(netns?: string): { nftables: Record<string, unknown>[] } {
  return JSON.parse(native().nftRun(path(netns), 'list ruleset', true, false)) as { nftables: Record<string, unknown>[] };
}
