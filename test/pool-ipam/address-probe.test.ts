import assert from 'node:assert/strict';
import { readlinkSync } from 'node:fs';
import type { NativeError } from '../../src/native';
import { InputError } from '../../src/errors';
import { CommandError, ip, nft, run } from '../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../src/kernel/netns';
import { parseIp } from '../../src/net/cidr';
import { probeAddress } from '../../src/pool-ipam/address-probe';
import { requireCommands, requireRoot, uniqueName } from '../support/kernel';

/** Set on the links, so the expected answers are literals. */
const proberMac = '02:00:00:00:21:01';
const holderMac = '02:00:00:00:21:02';

interface PodLink {
  /** The pod's namespace: eth0 there is down and has no address, as the CNI main plugin leaves it for IPAM. */
  prober: string;
  /** Another host on the link, holding 10.213.0.2/24 and fd00:213::2/64 on its eth0. */
  holder: string;
  /** Every namespace made, the prober and the holder first. */
  namespaces: string[];
  cleanup: () => void;
}

/**
 * `veth`: a veth pair. `macvlan`: two bridge-mode macvlans of a NIC that stays in a third namespace, the
 * way the macvlan CNI plugin links pods. The holder's IPv6 address skips DAD, so it is not tentative.
 */
function podLink(kind: 'veth' | 'macvlan'): PodLink {
  const namespaces = ['pod', 'holder', ...(kind === 'macvlan' ? ['lower'] : [])].map((role) => uniqueName(`strait-probe-${role}`));
  const [prober, holder, lower] = namespaces as [string, string, string | undefined];
  const cleanup = () => namespaces.forEach(deleteNetns);
  try {
    namespaces.forEach(createNetns);
    if (lower === undefined) {
      ip(
        ['link', 'add', 'eth0', 'address', proberMac, 'type', 'veth', 'peer', 'name', 'eth0', 'address', holderMac, 'netns', holder],
        prober,
      );
    } else {
      // The host's NIC: one end of a veth pair (this kernel has no dummy driver), both ends up for carrier.
      ip(['link', 'add', 'nic0', 'type', 'veth', 'peer', 'name', 'nic1'], lower);
      for (const dev of ['nic0', 'nic1']) ip(['link', 'set', dev, 'up'], lower);
      for (const [ns, mac] of [
        [prober, proberMac],
        [holder, holderMac],
      ] as const) {
        ip(['link', 'add', 'link', 'nic0', 'name', 'mv0', 'address', mac, 'type', 'macvlan', 'mode', 'bridge'], lower);
        ip(['link', 'set', 'mv0', 'netns', ns], lower);
        ip(['link', 'set', 'mv0', 'name', 'eth0'], ns);
      }
    }
    ip(['addr', 'add', '10.213.0.2/24', 'dev', 'eth0'], holder);
    ip(['addr', 'add', 'fd00:213::2/64', 'dev', 'eth0', 'nodad'], holder);
    ip(['link', 'set', 'eth0', 'up'], holder);
  } catch (err) {
    cleanup();
    throw err;
  }
  return { prober, holder, namespaces, cleanup };
}

const isUp = (ns: string) => (JSON.parse(ip(['-j', 'link', 'show', 'eth0'], ns)) as { flags: string[] }[])[0]!.flags.includes('UP');

/** Every namespace's IPv4 and IPv6 neighbour tables are empty (Spiderpool #4475: probes must teach none). */
function assertNoNeighbours(link: PodLink): void {
  for (const ns of link.namespaces) {
    for (const family of ['-4', '-6']) assert.equal(ip([family, 'neigh', 'show'], ns), '', `${ns} learned a neighbour (${family})`);
  }
}

/**
 * Counts the ARP frames the pod's eth0 sends (its probes: it has no IPv4 address to send others from);
 * with `drop`, also drops them, so that every send fails (ENOBUFS).
 */
function countArpSent(ns: string, drop = false): () => number {
  nft(
    `table netdev strait_probe_test {
  chain out {
    type filter hook egress device "eth0" priority 0;
    ether type arp counter${drop ? ' drop' : ''}
  }
}`,
    ns,
  );
  return () => {
    const listing = JSON.parse(run(['ip', 'netns', 'exec', ns, 'nft', '-j', 'list', 'chain', 'netdev', 'strait_probe_test', 'out'])) as {
      nftables: { rule?: { expr: { counter?: { packets: number } }[] } }[];
    };
    const counters = listing.nftables.flatMap((o) => o.rule?.expr ?? []).flatMap((e) => (e.counter ? [e.counter.packets] : []));
    assert.equal(counters.length, 1);
    return counters[0]!;
  };
}

/** Debian's arping sending RFC 5227 probes (-0: sender 0.0.0.0; exit 0 answered, 1 not): the reference. */
function arpingAnswered(ns: string, address: string): boolean {
  try {
    run(['ip', 'netns', 'exec', ns, 'arping', '-0', '-q', '-c', '3', '-W', '0.1', '-i', 'eth0', address]);
    return true;
  } catch (err) {
    if (err instanceof CommandError && err.status === 1) return false;
    throw err;
  }
}

const probe = (ns: string, address: string, options: { ifname?: string; tries?: number } = {}) =>
  probeAddress({ netns: netnsPath(ns), ifname: options.ifname ?? 'eth0', address: parseIp('address', address), tries: options.tries });

describe('address probes: arguments (pure)', () => {
  const good = { netns: '/run/netns/pod', ifname: 'eth0', address: parseIp('address', '10.213.0.2') };
  const cases: [string, Record<string, unknown>, unknown][] = [
    ['netns', { netns: 'pod' }, 'pod'],
    ['ifname', { ifname: '' }, ''],
    ['ifname', { ifname: 'a-name-of-16-chr' }, 'a-name-of-16-chr'],
    ['ifname', { ifname: 'eth/0' }, 'eth/0'],
    ['address', { address: { family: 5, value: 1n } }, { family: 5, value: '1' }],
    ['address', { address: { family: 4, value: 1n << 32n } }, { family: 4, value: '4294967296' }],
    ['tries', { tries: 0 }, 0],
    ['tries', { tries: 1.5 }, 1.5],
    ['timeoutMs', { timeoutMs: 0 }, 0],
    ['timeoutMs', { timeoutMs: 60_001 }, 60_001],
  ];
  for (const [field, change, value] of cases) {
    it(`refuses ${field} ${JSON.stringify(value)}, naming the field and the value`, () => {
      assert.throws(
        () => probeAddress({ ...good, ...change } as never),
        (e: unknown) => {
          assert.ok(e instanceof InputError, String(e));
          assert.equal(e.field, field);
          assert.deepEqual(e.value, value);
          return true;
        },
      );
    });
  }
});

/** A fresh pod link for each test of the calling suite, deleted after it, also when it fails. */
function usePodLink(kind: 'veth' | 'macvlan'): () => PodLink {
  let link: PodLink | undefined;
  beforeEach(() => {
    link = podLink(kind);
  });
  afterEach(() => {
    link?.cleanup();
    link = undefined;
  });
  return () => link!;
}

async function ipv4Answers(ctx: Mocha.Context, link: PodLink): Promise<void> {
  requireCommands(ctx, ['arping'], 'apt-get install arping; .ci/setup installs it');
  const { prober } = link;
  assert.deepEqual(await probe(prober, '10.213.0.2'), { answered: true, mac: holderMac });
  assert.deepEqual(await probe(prober, '10.213.0.3'), { answered: false });
  assert.equal(isUp(prober), false, 'eth0 was down before the probes');
  assertNoNeighbours(link);
  ip(['link', 'set', 'eth0', 'up'], prober);
  assert.equal(arpingAnswered(prober, '10.213.0.2'), true);
  assert.equal(arpingAnswered(prober, '10.213.0.3'), false);
}

async function ipv6Answers(link: PodLink): Promise<void> {
  const { prober } = link;
  assert.deepEqual(await probe(prober, 'fd00:213::2'), { answered: true, mac: holderMac });
  assert.deepEqual(await probe(prober, 'fd00:213::3'), { answered: false });
  assert.equal(isUp(prober), false, 'eth0 was down before the probes');
  assertNoNeighbours(link);
}

const ipv4Title =
  'IPv4: the holder answers with its MAC, a free address goes unanswered; eth0 stays down, no neighbour table learns anything, and arping agrees';
const ipv6Title =
  'IPv6: the holder answers with its MAC, a free address goes unanswered; eth0 stays down and no neighbour table learns anything';

describe('address probes from a pod namespace (real namespaces)', function () {
  requireRoot(this);

  describe('over veth', () => {
    const link = usePodLink('veth');

    it(ipv4Title, async function () {
      await ipv4Answers(this, link());
    });
    it(ipv6Title, async () => {
      await ipv6Answers(link());
    });

    it('enters the namespace on a thread of its own: the calling thread stays where it was', async () => {
      const before = readlinkSync('/proc/thread-self/ns/net');
      assert.deepEqual(await probe(link().prober, '10.213.0.2'), { answered: true, mac: holderMac });
      assert.equal(readlinkSync('/proc/thread-self/ns/net'), before);
    });

    it('leaves an interface that was up, up', async () => {
      const { prober } = link();
      ip(['link', 'set', 'eth0', 'up'], prober);
      assert.deepEqual(await probe(prober, '10.213.0.2'), { answered: true, mac: holderMac });
      assert.equal(isUp(prober), true);
    });

    it('retries a failed send, and rejects with the last errno when no try could send; eth0 is put back down', async () => {
      const { prober } = link();
      const sent = countArpSent(prober, true);
      await assert.rejects(probe(prober, '10.213.0.2'), (e: NativeError) => {
        assert.equal(e.name, 'SocketError');
        assert.deepEqual([e.code, e.operation], ['ENOBUFS', 'send probe']);
        assert.match(e.message, /eth0 in \/run\/netns\/strait-probe-pod-/);
        return true;
      });
      assert.equal(sent(), 3, 'every one of the three tries reached the device');
      assert.equal(isUp(prober), false);
    });

    it('rejects a missing interface with ENODEV and a missing namespace with ENOENT, naming the operation', async () => {
      const { prober } = link();
      await assert.rejects(probe(prober, '10.213.0.2', { ifname: 'eth9' }), (e: NativeError) => {
        assert.deepEqual([e.name, e.code, e.operation], ['NetlinkError', 'ENODEV', 'find interface']);
        return true;
      });
      await assert.rejects(probe(`${prober}-gone`, '10.213.0.2'), (e: NativeError) => {
        assert.deepEqual([e.name, e.code, e.operation], ['NetnsError', 'ENOENT', 'open network namespace']);
        return true;
      });
    });
  });

  describe('over macvlan', () => {
    const link = usePodLink('macvlan');

    it(ipv4Title, async function () {
      await ipv4Answers(this, link());
    });
    it(ipv6Title, async () => {
      await ipv6Answers(link());
    });

    // Counted here, not over veth: bringing a veth up flaps its peer's carrier, and the peer may drop its
    // first answer before the kernel reactivates its queue. A macvlan's siblings are not affected.
    it('sends one probe when the first is answered, and all three when none is', async () => {
      const { prober } = link();
      const sent = countArpSent(prober);
      assert.deepEqual(await probe(prober, '10.213.0.2'), { answered: true, mac: holderMac });
      assert.equal(sent(), 1);
      assert.deepEqual(await probe(prober, '10.213.0.3'), { answered: false });
      assert.equal(sent(), 1 + 3);
    });
  });
});
