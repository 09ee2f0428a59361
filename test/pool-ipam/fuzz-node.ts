/**
 * A node for the pool IPAM fuzz suites (test/fuzz/cni-plugin, test/fuzz/pool-ipam-socket): the lab API
 * server, the node's pool IPAM service in this process with its log captured, a pool, and pod `fuzz`
 * whose namespace has an `eth0` that answers no probe, holding one standing attachment (container
 * `fuzz-ctr` on eth0 of network `underlay`), so CHECK and a retried ADD have something to find.
 *
 * Its state is what a refusal must leave as it was: every IPClaim and Endpoint on the API server. An
 * accepted input may change it (an ADD of a new container, a DEL or GC of the standing one): `restore`
 * puts the standing state back before the next input, so every input meets the same node.
 */
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { group, version } from '../../src/api/resource-names';
import { ip } from '../../src/kernel/command';
import type { AddRequest } from '../../src/pool-ipam/protocol';
import { cniErrorCodes } from '../../src/pool-ipam/protocol';
import { assertClearMessage, assertNamesField } from '../support/fuzz';
import { type CapturedLog, captureLog } from '../support/log-capture';
import { type PoolIpamFixture, poolIpamFixture } from './fixture';

export interface FuzzNode {
  f: PoolIpamFixture;
  /** The pod's namespace path (CNI_NETNS), its uid, and the standing attachment's ADD as the service gets it. */
  netns: string;
  podUid: string;
  standing: AddRequest;
  /** The standing attachment's address, as ADD answers it (`10.6.11.x/24`). */
  standingAddress: string;
  state(): Promise<unknown>;
  /** Back to the standing state after an accepted input changed it; throws when it cannot be. */
  restore(): Promise<void>;
  /** Marks the log; `checkLog` then checks every line written since. */
  logMark(): number;
  /** No line since `mark` is an error, or carries a stack, a TypeError's words or an object printed as such. */
  checkLog(mark: number): Record<string, unknown>[];
  close(): Promise<void>;
}

export async function fuzzNode(options: { requestArrivalMs?: number } = {}): Promise<FuzzNode> {
  const captured: CapturedLog = captureLog('info');
  const f = await poolIpamFixture({ log: captured.log, ...options });
  try {
    await f.pool('fuzz', { subnet: '10.6.11.0/24', ips: ['10.6.11.10-10.6.11.60'] });
    const pod = await f.pod('fuzz');
    ip(['-n', pod.netnsName, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0-peer']);
    const standing: AddRequest = {
      containerId: 'fuzz-ctr',
      ifname: 'eth0',
      network: 'underlay',
      netns: pod.netns,
      podNamespace: 'default',
      podName: 'fuzz',
      podUid: pod.uid,
      options: { defaultIpv4Pools: ['fuzz'], defaultIpv6Pools: [], detectConflict: true, detectGateway: false },
    };
    const allocator = f.service!.allocator;
    const standingAddress = (await allocator.add(standing)).ips[0]!.address;
    const state = async () => {
      const claims = (await f.custom.listClusterCustomObject({ group, version, plural: 'ipclaims' })) as {
        items: { metadata: { name: string }; spec: unknown }[];
      };
      const endpoints = (await f.custom.listCustomObjectForAllNamespaces({ group, version, plural: 'straitendpoints' })) as {
        items: { metadata: { namespace: string; name: string }; spec: unknown }[];
      };
      return {
        claims: claims.items.map((c) => [c.metadata.name, c.spec]),
        endpoints: endpoints.items.map((e) => [`${e.metadata.namespace}/${e.metadata.name}`, e.spec]),
      };
    };
    const standingState = await state();
    return {
      f,
      netns: pod.netns,
      podUid: pod.uid,
      standing,
      standingAddress,
      state,
      async restore() {
        if (isDeepStrictEqual(await state(), standingState)) return;
        // Through the allocator, not the socket under test: every attachment held goes, the standing one comes back.
        for (const claim of allocator.claims.all()) {
          await allocator.del({
            containerId: claim.containerID ?? '',
            ifname: claim.ifname,
            network: claim.network,
            podNamespace: claim.podNamespace,
            podName: claim.podName,
          });
        }
        await allocator.add(standing);
        assert.deepEqual(await state(), standingState, 'the standing state could not be restored after an accepted input');
      },
      logMark: () => captured.lines.length,
      checkLog(mark) {
        const lines = captured.lines.slice(mark);
        for (const line of lines) {
          const text = JSON.stringify(line);
          assert.ok(Number(line.level) < 50, `the service logged an error: ${text}`);
          assert.ok(!('stack' in line) && !('err' in line && typeof line.err === 'object'), `the service logged a stack: ${text}`);
          assertClearMessage(
            Object.values(line)
              .filter((v) => typeof v === 'string')
              .join('\n'),
          );
        }
        return lines;
      },
      close: () => f.close(),
    };
  } catch (err) {
    await f.close();
    throw err;
  }
}

/** Codes a refusal may carry: CNI's and Strait's, but not 5: an I/O failure answering bad input is a defect of the reader. */
export function assertRefusalCode(code: unknown, msg: string): void {
  assert.ok(
    Number.isInteger(code) && (Object.values(cniErrorCodes) as number[]).includes(code as number),
    `a refusal with code ${JSON.stringify(code)}, not a CNI or Strait code: ${msg}`,
  );
  assert.notEqual(code, cniErrorCodes.ioFailure, `bad input answered as an I/O failure (code 5): ${msg}`);
}

/** What an input changed of a valid one: the fields (`ipam.default_ipv4_ippool[1]`), and the strings they now hold. */
export interface Changes {
  changed: string[];
  values: string[];
}

/** What `text`, a document as sent, changed of `valid`; `root` names the whole text when it is not JSON or not an object like it. */
export function changesOf(valid: unknown, text: string, root: string): Changes {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { changed: [root], values: [] };
  }
  const leaves = differences(valid, parsed, '', root);
  return {
    changed: leaves.map(([path]) => path),
    values: leaves.map(([, value]) => value).filter((v): v is string => typeof v === 'string'),
  };
}

/** Each path where `after` differs from `before`, with what `after` holds there. */
function differences(before: unknown, after: unknown, path: string, root: string): [string, unknown][] {
  if (isDeepStrictEqual(before, after)) return [];
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObject(before) && isObject(after)) {
    // Own keys only: a parsed "__proto__" key is the document's, Object.prototype is not.
    const own = (o: Record<string, unknown>, k: string) => (Object.hasOwn(o, k) ? o[k] : undefined);
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...keys].flatMap((k) => differences(own(before, k), own(after, k), path === '' ? k : `${path}.${k}`, root));
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    return Array.from({ length: Math.max(before.length, after.length) }, (_, i) =>
      differences(before[i], after[i], `${path}[${i}]`, root),
    ).flat();
  }
  return [[path === '' ? root : path, after]];
}

/**
 * Whether a refusal names what changed: one of the `names` (a path, an ancestor or descendant of one, its
 * last key alone) or one of the changed string `values` (a pool, a socket path: the service's own words).
 */
function namesChange(message: string, names: readonly string[], values: readonly string[]): boolean {
  const leading = /^([^\s:]+): /.exec(message)?.[1];
  const related = (a: string, b: string) =>
    a === b || a.startsWith(`${b}.`) || a.startsWith(`${b}[`) || b.startsWith(`${a}.`) || b.startsWith(`${a}[`);
  if (leading !== undefined && names.some((n) => related(leading, n))) return true;
  const words = names
    .flatMap((n) => [
      n,
      n
        .replace(/\[\d+\]/g, '')
        .split('.')
        .pop()!,
    ])
    .filter((w) => w.length > 1);
  // A value of a character or two counts only as a word of its own ("interface W on"), not inside another.
  const quotes = (v: string) =>
    v.length > 2
      ? message.includes(v)
      : new RegExp(`(^|[\\s"'(/])${v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[\\s"',)/:])`).test(message);
  return (
    words.some((w) => message.includes(w)) ||
    values.filter((v) => v.trim() !== '').some((v) => quotes(v) || quotes(JSON.stringify(v).slice(1, -1)))
  );
}

/** A refusal's message is clear when it names what the input changed, or else a field as any refusal does. */
export function assertNamesChange(message: string, input: { changed: readonly string[]; values: readonly string[] }): void {
  if (!namesChange(message, input.changed, input.values)) assertNamesField(message);
}
