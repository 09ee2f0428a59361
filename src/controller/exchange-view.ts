/**
 * The NetworkConfig exchange as the pure core (reconcile.ts) reads it: what each control plane's adapter
 * (the run directory: files/exchange.ts; the API servers: kubernetes/objects.ts) fills in from its own store.
 */
import type { NetworkConfigSpec, NetworkConfigStatus } from '../api/network-config';

export interface ExchangeView {
  /** NetworkConfig specs addressed to us, by owner. */
  specsForUs: Map<string, NetworkConfigSpec>;
  /** Why a NetworkConfig addressed to us cannot be read, by owner (also in `problems`). */
  unreadableSpecs: Map<string, string>;
  /** The peers' statuses on our specs, by peer. */
  statusesOfOurs: Map<string, NetworkConfigStatus>;
  /** Why a peer's status on our spec cannot be read, by peer (also in `problems`). */
  unreadableStatuses: Map<string, string>;
  /** Files this controller wrote before (exchange files and node specs), to delete what is no longer wanted. */
  written: string[];
  /** Files that are there but could not be used, and why. */
  problems: string[];
}

/** An exchange with nothing in it yet, for a reader to fill. */
export const emptyExchange = (): ExchangeView => ({
  specsForUs: new Map(),
  unreadableSpecs: new Map(),
  statusesOfOurs: new Map(),
  unreadableStatuses: new Map(),
  written: [],
  problems: [],
});
