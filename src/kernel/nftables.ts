/**
 * nftables through libnftables in the agent's own process (the native addon), in a namespace by name
 * (/run/netns/NAME) or the current one: a script runs as one transaction and a listing comes back as
 * nft's JSON, without starting an `nft` process. A refusal is a BpfError: errno (EINVAL for a script
 * nft's parser refused) and nft's message with the offending line.
 */
import { native } from '../bpf/native';
import { netnsPath } from './netns';

const path = (netns?: string) => (netns === undefined ? null : netnsPath(netns));

/** Runs an nft script (nft syntax) as one transaction. */
export function runNft(script: string, netns?: string): void {
  native().nftRun(path(netns), script, false, false);
}

/** `nft -j list ruleset`: the whole ruleset as nft's JSON document. */
export function listRuleset(netns?: string): { nftables: Record<string, unknown>[] } {
  return JSON.parse(native().nftRun(path(netns), 'list ruleset', true, false)) as { nftables: Record<string, unknown>[] };
}
