/**
 * Finds what this kernel supports by trying each feature, never by reading version numbers. It runs in
 * the namespace the agent programs (its own, as on a Kubernetes node, or --netns) and needs no more than
 * the agent does (NET_ADMIN, BPF: docs/helm.md): no throw-away namespace, which would need CAP_SYS_ADMIN.
 * So it changes nothing there that carries traffic: the devices it makes have unique names and VNIs,
 * stay down and are deleted at once; rules and xfrm policies are only listed, the nftables ruleset only
 * checked (`nft --check`: the kernel validates it and throws it away). It talks to the kernel in
 * process (BPF syscalls, rtnetlink, xfrm netlink, libnftables), starting no `ip` or `nft`.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { BpfMap, BpfProgram, MapFlags, MapType, ProgType, attachClsact, detachClsact, ifIndex, ipv4, lpmKey, u32 } from '../native';
import { BPF_LINK_TYPE_TCX } from '../native/tc';
import type { NativeError } from '../native/error';
import { native } from '../native/binding';
import { netnsPath } from '../kernel/netns';
import { checkNft } from '../kernel/nftables';
import { type NetlinkChange, type NetlinkResult, applyNetlink, dumpRules } from '../kernel/rtnetlink';
import { type XfrmResult, applyXfrm, dumpXfrmPolicies } from '../kernel/xfrm';
import { type Feature, type ProbeReport, featureNames } from './features';

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
  await tryFeature(report, 'lpmTrie', () =>
    withMap({ type: MapType.LpmTrie, name: 'strait_probe', key: lpmKey(ipv4), value: u32, maxEntries: 1, flags: MapFlags.NoPrealloc }),
  );
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
  await tryFeature(report, 'policyRouting', () => void dumpRules(netns));
  await tryFeature(report, 'nftables', () => {
    const table = { family: 'inet', table: 'strait_probe' } as const;
    checkNft(
      {
        nftables: [
          { add: { table: { family: table.family, name: table.table } } },
          { add: { map: { ...table, name: 'm', type: 'ipv4_addr', map: 'ipv4_addr' } } },
          { add: { element: { ...table, name: 'm', elem: [['10.0.0.1', '10.1.0.1']] } } },
        ],
      },
      netns,
    );
  });
  await tryFeature(report, 'xfrm', () => void dumpXfrmPolicies(netns));
  await tryFeature(report, 'esp', () => {
    // An SA without a policy sends nothing; between documentation addresses it receives nothing either.
    // Added and deleted in one batch: the delete runs also when the add is refused (then ESRCH, not reported).
    const id = { src: '192.0.2.1', dst: '192.0.2.2', spi: randomInt(256, 2 ** 32) };
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
          },
          { kind: 'state', op: 'del', ...id },
        ],
        netns,
      ),
    );
  });
  await tryFeature(report, 'xfrmInterface', () => withProbeDevice({ type: 'xfrm', ifId: randomInt(1, 2 ** 31) }, netns));
}

/** Probes in the namespace `netns` (by name), or in the current one. */
export async function probeKernel(netns?: string): Promise<ProbeReport> {
  const report: ProbeReport = { features: Object.fromEntries(featureNames.map((f) => [f, false])) as ProbeReport['features'], reasons: {} };
  await probeBpf(report);
  await probeNetworking(report, netns);
  return report;
}
