/**
 * Finds what this kernel supports by trying each feature, never by reading version numbers, and each
 * feature of an IP family (features.ts) with that family's addresses. It runs in the namespace the agent
 * programs (its own, as on a Kubernetes node, or --netns) and needs no more than the agent does
 * (NET_ADMIN, BPF: docs/helm.md): no throw-away namespace, which would need CAP_SYS_ADMIN. So it changes
 * nothing there that carries traffic: the devices it makes have unique names and VNIs, stay down and are
 * deleted at once; routes and rules are only listed; the xfrm policies and states it adds select and
 * hold documentation addresses only (a policy with an if_id no device has matches no packet) and are
 * deleted at once; the nftables rulesets are only checked (`nft --check`: the kernel validates them and
 * throws them away). It talks to the kernel in process (BPF syscalls, rtnetlink, xfrm netlink,
 * libnftables), starting no `ip` or `nft`.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { BpfMap, BpfProgram, MapFlags, MapType, ProgType, attachClsact, detachClsact, ifIndex, ipv4, ipv6, lpmKey, u32 } from '../native';
import { BPF_LINK_TYPE_TCX } from '../native/tc';
import type { NativeError } from '../native/error';
import { native } from '../native/binding';
import { netnsPath } from '../kernel/netns';
import { checkNft } from '../kernel/nftables';
import type { NftAddressType, NftDocument, NftNetworkProtocol } from '../kernel/nft-json';
import { type NetlinkChange, type NetlinkResult, applyNetlink, dumpRoutes, dumpRules } from '../kernel/rtnetlink';
import { type XfrmChange, type XfrmResult, applyXfrm, dumpXfrmPolicies, xfrmDir } from '../kernel/xfrm';
import { type Feature, type ProbeReport, featureNames, inFamily, ipFamilies } from './features';
import type { IpFamily } from '../net/cidr';

/** `r0 = 0; exit`: the smallest valid TC program (TC_ACT_OK). */
const returnZero = Buffer.from('b700000000000000' + '9500000000000000', 'hex');

/**
 * A change of the probe's that the kernel refused, in the kernel's words: errno and message ("EOPNOTSUPP
 * (Operation not supported): Unknown device type"), without the operation, which names the probe's
 * random device or SPI.
 */
class Refused extends Error {
  readonly code: string;
  constructor(error: NativeError) {
    const operation = `${error.operation} failed: `;
    super(error.message.startsWith(operation) ? error.message.slice(operation.length) : error.message);
    this.code = error.code;
  }
}

/** Throws the first change of a batch the kernel refused. */
function throwRefused(results: readonly (NetlinkResult | XfrmResult)[]): void {
  for (const result of results) if (!result.ok) throw new Refused(result.error);
}

type Check = () => void | Promise<void>;

async function tryFeature(report: ProbeReport, feature: Feature, check: Check): Promise<void> {
  try {
    await check();
    report.features[feature] = true;
  } catch (err) {
    report.features[feature] = false;
    report.reasons[feature] = err instanceof Error ? err.message : String(err);
  }
}

function withProgram<T>(use: (prog: BpfProgram) => T): T {
  const prog = BpfProgram.fromInstructions(ProgType.SchedCls, returnZero);
  try {
    return use(prog);
  } finally {
    prog.close();
  }
}

function withMap(spec: Parameters<typeof BpfMap.create>[0], use: (map: BpfMap<unknown, unknown>) => void = () => {}): void {
  const map = BpfMap.create(spec) as BpfMap<unknown, unknown>;
  try {
    use(map);
  } finally {
    map.close();
  }
}

async function probeBpf(report: ProbeReport): Promise<void> {
  await tryFeature(report, 'bpf', () => withMap({ type: MapType.Array, name: 'strait_probe', key: u32, value: u32, maxEntries: 1 }));
  await tryFeature(report, 'btf', () => void native().probeKernelBtf());
  for (const [family, address] of [
    [4, ipv4],
    [6, ipv6],
  ] as const) {
    await tryFeature(report, inFamily('lpmTrie', family), () =>
      withMap({ type: MapType.LpmTrie, name: 'strait_probe', key: lpmKey(address), value: u32, maxEntries: 1, flags: MapFlags.NoPrealloc }),
    );
  }
  await tryFeature(report, 'testRun', () =>
    withProgram((prog) => {
      const r = prog.testRun(Buffer.alloc(64));
      if (r.retval !== 0) throw new Error(`test run returned ${r.retval}, expected 0`);
    }),
  );
}

/** A device name no other has (15 characters, the kernel's limit). */
const probeDevice = () => `strait-pr-${randomBytes(2).toString('hex')}`;
/** A VXLAN network id no real device uses, so the probe's never conflicts with one. */
const probeVni = () => randomInt(1, 0xffffff);

/** A probe device: a new link but its name, which withProbeDevice gives. */
type ProbeLink = Omit<Extract<NetlinkChange, { op: 'add'; kind: 'link' }>, 'kind' | 'op' | 'name' | 'up'>;

/** Makes a device (down: it carries nothing), hands it to `use`, and deletes it, also when `use` throws. */
async function withProbeDevice(
  link: ProbeLink,
  netns: string | undefined,
  use: (name: string) => void | Promise<void> = () => {},
): Promise<void> {
  const name = probeDevice();
  throwRefused(applyNetlink([{ kind: 'link', op: 'add', name, ...link }], netns));
  try {
    await use(name);
  } finally {
    throwRefused(applyNetlink([{ kind: 'link', op: 'del', name }], netns));
  }
}

/** The TC hooks, tried on a VXLAN device made for the purpose: the kernel runs nothing there. */
async function probeTc(report: ProbeReport, device: string, netns: string | undefined): Promise<void> {
  const path = netns === undefined ? undefined : netnsPath(netns);
  const target = { ifindex: ifIndex(device, path), direction: 'ingress' as const, ...(path === undefined ? {} : { netns: path }) };
  await tryFeature(report, 'clsact', () =>
    withProgram((prog) => {
      attachClsact(target, prog, { priority: 1, handle: 1 });
      if (!detachClsact(target, { priority: 1, handle: 1 })) throw new Error('attached filter not found');
    }),
  );
  await tryFeature(report, 'tcx', () =>
    withProgram((prog) => {
      // Unpinned: the link goes away with its fd (and with the device).
      const fd = native().tcxAttach(target, prog.fd);
      try {
        const link = native().linkInfo(fd);
        if (link.type !== BPF_LINK_TYPE_TCX) throw new Error(`link type ${link.type}, expected tcx (${BPF_LINK_TYPE_TCX})`);
      } finally {
        native().closeFd(fd);
      }
    }),
  );
}

async function probeNetworking(report: ProbeReport, netns: string | undefined): Promise<void> {
  let tcTried = false;
  await tryFeature(report, 'vxlan', () =>
    // Without learning, as the addon makes every VXLAN device.
    withProbeDevice({ type: 'vxlan', vni: probeVni(), port: 4789, local: '127.0.0.1' }, netns, async (device) => {
      tcTried = true;
      await probeTc(report, device, netns);
    }),
  );
  if (!tcTried) {
    for (const f of ['clsact', 'tcx'] as const) report.reasons[f] = `no VXLAN device to try it on: ${report.reasons.vxlan}`;
  }
  await tryFeature(report, 'vxlanCollectMd', async () => {
    try {
      await withProbeDevice({ type: 'vxlan', external: true, port: 4790 }, netns);
    } catch (err) {
      // Another collect_md device on this port (one per port; the probe's name is unique): the kernel has the mode.
      if (!(err instanceof Refused && err.code === 'EEXIST')) throw err;
    }
  });
  for (const family of ipFamilies) await probeFamily(report, family, netns);
  await tryFeature(report, 'xfrmInterface', () => withProbeDevice({ type: 'xfrm', ifId: randomInt(1, 2 ** 31) }, netns));
}

/** Documentation addresses of each family (RFC 5737, RFC 3849): no real traffic comes from or goes to them. */
const documentation = {
  4: { a: '192.0.2.1', b: '192.0.2.2', net: '192.0.2.0/25', other: '192.0.2.128/25', mapped: '198.51.100.0/25' },
  6: { a: '2001:db8::1', b: '2001:db8::2', net: '2001:db8::/64', other: '2001:db8:1::/64', mapped: '2001:db8:2::/64' },
} as const;

/**
 * The kernel fallback's NAT table of one family as nat-ruleset.ts builds it, in little: a table of the
 * family (`ip`, `ip6`), a map of its addresses, `snat ip6 prefix to ip6 saddr map { ... }` (a prefix NAT,
 * which needs the netmap flag of kernel and nft) and `dnat ip6 to ip6 daddr map @m`.
 */
export function natProbeRuleset(family: IpFamily): NftDocument {
  const protocol: NftNetworkProtocol = family === 4 ? 'ip' : 'ip6';
  const type: NftAddressType = family === 4 ? 'ipv4_addr' : 'ipv6_addr';
  const { a, b, net, mapped } = documentation[family];
  const table = { family: protocol, table: 'strait_probe' } as const;
  const prefix = (cidr: string) => ({ prefix: { addr: cidr.split('/')[0]!, len: Number(cidr.split('/')[1]) } });
  const header = (field: 'saddr' | 'daddr') => ({ payload: { protocol, field } });
  return {
    nftables: [
      { add: { table: { family: protocol, name: table.table } } },
      { add: { map: { ...table, name: 'm', type, map: type } } },
      { add: { element: { ...table, name: 'm', elem: [[a, b]] } } },
      { add: { chain: { ...table, name: 'pre', type: 'nat', hook: 'prerouting', prio: -110, policy: 'accept' } } },
      {
        add: {
          rule: { ...table, chain: 'pre', expr: [{ dnat: { family: protocol, addr: { map: { key: header('daddr'), data: '@m' } } } }] },
        },
      },
      { add: { chain: { ...table, name: 'post', type: 'nat', hook: 'postrouting', prio: 90, policy: 'accept' } } },
      {
        add: {
          rule: {
            ...table,
            chain: 'post',
            expr: [
              {
                snat: {
                  family: protocol,
                  addr: { map: { key: header('saddr'), data: { set: [[prefix(net), prefix(mapped)]] } } },
                  flags: 'netmap',
                  type_flags: 'prefix',
                },
              },
            ],
          },
        },
      },
    ],
  };
}

/**
 * An xfrm policy with the family's selectors and an ESP template between IPv4 documentation addresses
 * (Strait's tunnels are IPv4 for both families), added, read back and deleted by its index. Its random
 * if_id, which no xfrm interface has, keeps it from matching any packet while it exists.
 */
function probeXfrmPolicy(family: IpFamily, netns: string | undefined): void {
  const { net, other } = documentation[family];
  const ifId = randomInt(1, 2 ** 31);
  const add: XfrmChange = {
    kind: 'policy',
    op: 'add',
    dir: xfrmDir.out,
    src: net,
    dst: other,
    ifId,
    tmplSrc: '192.0.2.1',
    tmplDst: '192.0.2.2',
    reqid: randomInt(1, 2 ** 31),
  };
  throwRefused(applyXfrm([add], netns));
  const added = dumpXfrmPolicies(netns).filter((p) => p.ifId === ifId && p.src === net && p.dst === other);
  throwRefused(
    applyXfrm(
      added.map((p) => ({ kind: 'policy', op: 'del', dir: p.dir, index: p.index, ifId })),
      netns,
    ),
  );
  if (added.length !== 1) throw new Error(`the policy added reads back ${added.length} times, not once`);
}

/**
 * An ESP state between the family's documentation addresses, as Strait installs its states (no selector
 * family: XFRM_STATE_AF_UNSPEC), added and deleted in one batch.
 */
function probeEsp(family: IpFamily, netns: string | undefined): void {
  // An SA without a policy sends nothing; between documentation addresses it receives nothing either.
  // Added and deleted in one batch: the delete runs also when the add is refused (then ESRCH, not reported).
  const id = { src: documentation[family].a, dst: documentation[family].b, spi: randomInt(256, 2 ** 32) };
  throwRefused(
    applyXfrm(
      [
        {
          kind: 'state',
          op: 'add',
          ...id,
          reqid: randomInt(1, 2 ** 31),
          ifId: 0,
          aead: 'rfc4106(gcm(aes))',
          icvBits: 128,
          key: Buffer.alloc(20, 0x11),
          afUnspec: true,
        },
        { kind: 'state', op: 'del', ...id },
      ],
      netns,
    ),
  );
}

/** The features of one family: its routes and rules (dumped), its NAT (checked), xfrm policies and ESP states. */
async function probeFamily(report: ProbeReport, family: IpFamily, netns: string | undefined): Promise<void> {
  // The main table: every namespace has it, with the family's local routes once the family is up.
  await tryFeature(report, inFamily('routes', family), () => void dumpRoutes(254, netns, family));
  await tryFeature(report, inFamily('policyRouting', family), () => void dumpRules(netns, family));
  await tryFeature(report, inFamily('nftables', family), () => checkNft(natProbeRuleset(family), netns));
  await tryFeature(report, inFamily('xfrm', family), () => probeXfrmPolicy(family, netns));
  await tryFeature(report, inFamily('esp', family), () => probeEsp(family, netns));
}

/** Probes in the namespace `netns` (by name), or in the current one. */
export async function probeKernel(netns?: string): Promise<ProbeReport> {
  const report: ProbeReport = { features: Object.fromEntries(featureNames.map((f) => [f, false])) as ProbeReport['features'], reasons: {} };
  await probeBpf(report);
  await probeNetworking(report, netns);
  return report;
}
