/**
 * The compiled addon (native/, built by node-gyp into build/Release). Internal: the rest of Strait uses
 * the typed classes of this folder, which check sizes and own the fds.
 */
import { join } from 'node:path';
import { type NetlinkError, nativeErrorClasses } from './error';

type NetlinkAction = 'new' | 'del';

/** A datagram received by a UDP socket of native/src/udp-socket.cc. */
export interface Datagram {
  /** The sender's address: dotted IPv4 for an IPv4 sender (never v4-mapped), else IPv6. */
  address: string;
  port: number;
  data: Buffer;
}

/** What a netlink monitor (native/src/netlink-monitor.cc) tells its listener, in batches. */
export type NetlinkEvent =
  /** `new` also for a change to an existing link (up, renamed, moved here). */
  | { kind: 'link'; action: NetlinkAction; ifindex: number; ifname?: string; family: number }
  | { kind: 'addr'; action: NetlinkAction; family: number; ifindex: number }
  | { kind: 'route'; action: NetlinkAction; family: number; table: number }
  | { kind: 'rule'; action: NetlinkAction; family: number }
  /** Group `neigh`: neighbours, and FDB entries (bridge family). */
  | { kind: 'neigh' | 'fdb'; action: NetlinkAction; family: number; ifindex: number }
  | { kind: 'xfrm'; action: NetlinkAction; object: 'state' | 'policy' }
  | { kind: 'nft'; action: NetlinkAction; object: 'table' | 'chain' | 'rule' | 'set' | 'setelem' | 'other' }
  /** The kernel dropped events (its receive buffer was full, ENOBUFS): anything may have changed. */
  | { kind: 'overflow'; code: string };

export interface NativeMapSpec {
  name: string;
  type: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  flags: number;
  internal: boolean;
  pinPath: string | null;
  fd: number;
}

export interface NativeMapInfo {
  id: number;
  name: string;
  type: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  flags: number;
  btfId: number;
  btfKeyTypeId: number;
  btfValueTypeId: number;
}

export interface NativeTcTarget {
  ifindex: number;
  direction: 'ingress' | 'egress';
  netns?: string;
}

interface NativeTcSlot {
  priority: number;
  handle: number;
}

export interface NativeLinkInfo {
  id: number;
  type: number;
  progId: number;
  ifindex: number;
  attachType: number;
}

/** An IPv4 route as rtnetlink reports it (type and protocol by number, the device by name). */
export interface NativeRoute {
  dst: string;
  type: number;
  protocol: number;
  table: number;
  metric: number;
  onlink: boolean;
  dev?: string;
  gateway?: string;
}

/** An IPv4 or IPv6 policy rule; `other` holds the attribute types of selectors not decoded. */
export interface NativeRule {
  priority: number;
  table: number;
  action: number;
  flags: number;
  tos: number;
  src?: string;
  dst?: string;
  iif?: string;
  oif?: string;
  fwmark?: number;
  fwmask?: number;
  other: number[];
}

/** A neighbour (`address` its IP) or an FDB entry (`address` its remote, when it has one). */
export interface NativeNeighbour {
  address?: string;
  lladdr?: string;
  state: number;
  flags: number;
}

/** A link, with what the tunnel reconciler compares of a VXLAN or xfrm interface. */
export interface NativeLink {
  ifname: string;
  up: boolean;
  /** IFF_NOARP: the kernel resolves no neighbour on it (frames go to the device's own address). */
  noarp: boolean;
  mtu: number;
  address?: string;
  kind?: string;
  vxlan?: { id: number; port: number; local?: string; remote?: string; learning: boolean; external: boolean };
  xfrmIfId?: number;
}

export type NativeNetlinkChange =
  | {
      kind: 'route';
      op: 'add' | 'replace' | 'del';
      dst: string;
      table: number;
      protocol?: number;
      metric?: number;
      type?: 'unreachable';
      dev?: string;
      via?: string;
      onlink?: boolean;
    }
  | {
      kind: 'rule';
      op: 'add' | 'del';
      /** 4 when absent. */
      family?: 4 | 6;
      priority: number;
      table?: number;
      src?: string;
      dst?: string;
      iif?: string;
      fwmark?: number;
      fwmask?: number;
    }
  | { kind: 'neighbour'; op: 'replace' | 'del'; dev: string; address: string; lladdr?: string }
  | { kind: 'fdb'; op: 'append' | 'del'; dev: string; mac: string; dst: string }
  | {
      kind: 'link';
      op: 'add';
      name: string;
      type: 'vxlan' | 'xfrm';
      up?: boolean;
      mtu?: number;
      address?: string;
      vni?: number;
      local?: string;
      remote?: string;
      port?: number;
      external?: boolean;
      ifId?: number;
      noarp?: boolean;
    }
  | { kind: 'link'; op: 'set'; name: string; up?: boolean; mtu?: number; noarp?: boolean }
  | { kind: 'link'; op: 'del'; name: string };

/** An xfrm state as the kernel holds it; `aead.key` is key material, to be digested and wiped at once. */
export interface NativeXfrmState {
  src: string;
  dst: string;
  proto: number;
  spi: number;
  reqid: number;
  mode: number;
  ifId: number;
  /** Its selector has no family (XFRM_STATE_AF_UNSPEC): in tunnel mode it carries inner packets of either family. */
  afUnspec: boolean;
  aead?: { name: string; icvBits: number; key: Buffer };
}

/** An xfrm policy; `dir` as the kernel numbers it (a socket's policy adds 3), ports in host order. */
export interface NativeXfrmPolicy {
  dir: number;
  index: number;
  priority: number;
  src: string;
  dst: string;
  proto: number;
  sport: number;
  dport: number;
  ifindex: number;
  ifId: number;
  mark?: { value: number; mask: number };
  tmpls: { src: string; dst: string; proto: number; reqid: number; mode: number }[];
}

/** Strait's xfrm changes: ESP states in tunnel mode, policies with one ESP template (addresses and selectors IPv4 or IPv6, each pair of one family); a policy is deleted by its index. */
export type NativeXfrmChange =
  | {
      kind: 'state';
      op: 'add';
      src: string;
      dst: string;
      spi: number;
      reqid: number;
      ifId: number;
      aead: string;
      icvBits: number;
      key: Buffer;
      /** XFRM_STATE_AF_UNSPEC (`ip xfrm state ... flag af-unspec`): inner packets of either family; else only of the addresses' family. */
      afUnspec?: boolean;
    }
  | { kind: 'state'; op: 'del'; src: string; dst: string; spi: number }
  | {
      kind: 'policy';
      op: 'add' | 'update';
      dir: number;
      src: string;
      dst: string;
      ifId: number;
      tmplSrc: string;
      tmplDst: string;
      reqid: number;
    }
  | { kind: 'policy'; op: 'del'; dir: number; index: number; ifId: number; mark?: { value: number; mask: number } };

export interface NativeBinding {
  setErrorClasses(classes: typeof nativeErrorClasses): void;
  objectOpen(path: string, pinRoot: string | null): number;
  objectMaps(id: number): NativeMapSpec[];
  objectPrograms(id: number): { name: string; section: string; type: number; fd: number }[];
  objectGlobals(id: number): { name: string; map: string; offset: number; size: number; readOnly: boolean }[];
  objectSetGlobal(id: number, name: string, value: Buffer): void;
  objectSetMaxEntries(id: number, map: string, maxEntries: number): void;
  objectSetPinPath(id: number, map: string, path: string | null): void;
  objectReuseMapFd(id: number, map: string, fd: number): void;
  objectLoad(id: number): Promise<void>;
  objectClose(id: number): void;
  mapLookup(fd: number, key: Buffer, valueSize: number): Buffer | undefined;
  mapUpdate(fd: number, key: Buffer, value: Buffer, flags: number): void;
  mapDelete(fd: number, key: Buffer): boolean;
  mapGetNextKey(fd: number, key: Buffer | null, keySize: number): Buffer | undefined;
  mapUpdateBatch(fd: number, keys: Buffer, values: Buffer, count: number, flags: number): number;
  mapDeleteBatch(fd: number, keys: Buffer, count: number): number;
  mapLookupBatch(
    fd: number,
    inBatch: Buffer | null,
    keySize: number,
    valueSize: number,
    count: number,
  ): { count: number; keys: Buffer; values: Buffer; next?: Buffer };
  mapInfo(fd: number): NativeMapInfo;
  mapCreate(
    type: number,
    name: string,
    keySize: number,
    valueSize: number,
    maxEntries: number,
    flags: number,
    innerMapFd: number | null,
  ): number;
  numPossibleCpus(): number;
  progTestRun(
    fd: number,
    data: Buffer,
    dataSizeOut: number,
    repeat: number,
    ctx: Buffer | null,
    flags: number,
  ): { retval: number; duration: number; data: Buffer };
  progInfo(fd: number): { id: number; name: string; type: number; tag: string };
  progLoadInsns(type: number, insns: Buffer): number;
  objPin(fd: number, path: string): void;
  objGet(path: string): number;
  fdById(kind: 'map' | 'prog' | 'link', id: number): number;
  closeFd(fd: number): void;
  tcAttach(target: NativeTcTarget, opts: NativeTcSlot & { progFd: number; replace: boolean }): NativeTcSlot & { progId: number };
  tcQuery(target: NativeTcTarget, slot: NativeTcSlot): number | undefined;
  tcDetach(target: NativeTcTarget, slot: NativeTcSlot): boolean;
  tcHookDestroy(target: NativeTcTarget): boolean;
  tcxAttach(target: NativeTcTarget, progFd: number): number;
  linkInfo(fd: number): NativeLinkInfo;
  linkUpdate(linkFd: number, progFd: number): void;
  linkDetach(fd: number): void;
  btfStruct(path: string, name: string): { size: number; members: { name: string; offset: number; size: number }[] };
  probeKernelBtf(): boolean;
  releaseMemory(): void;
  ifNameToIndex(name: string, netns: string | null): number;
  interfaces(netns: string | null): { index: number; name: string }[];
  ensureBpffs(path: string, mount: boolean): boolean;
  rtnlRouteDump(netns: string | null, table: number, family?: 4 | 6): NativeRoute[];
  rtnlRuleDump(netns: string | null, family?: 4 | 6): NativeRule[];
  rtnlNeighbourDump(netns: string | null, dev: string, bridge: boolean): NativeNeighbour[];
  rtnlLinkDump(netns: string | null): NativeLink[];
  rtnlAddressDump(netns: string | null): { dev: string; address: string }[];
  rtnlApply(netns: string | null, changes: readonly NativeNetlinkChange[]): (NetlinkError | null)[];
  xfrmStateDump(netns: string | null): NativeXfrmState[];
  xfrmPolicyDump(netns: string | null): NativeXfrmPolicy[];
  xfrmApply(netns: string | null, changes: readonly NativeXfrmChange[]): (NetlinkError | null)[];
  nftRun(netns: string | null, commands: string, json: boolean, check: boolean): string;
  probeAddress(
    netns: string,
    ifname: string,
    family: 4 | 6,
    address: string,
    tries: number,
    timeoutMs: number,
  ): Promise<{ answered: boolean; mac?: string }>;
  netlinkMonitorOpen(netns: string | null, groups: string[], onEvents: (events: NetlinkEvent[]) => void): number;
  netlinkMonitorClose(id: number): boolean;
  /** A socket of both families (IPv4 peers as dotted IPv4), or of IPv4 alone where the kernel has no IPv6. */
  udpSocketOpen(netns: string | null, onDatagrams: (datagrams: Datagram[]) => void): number;
  udpSocketSend(id: number, address: string, port: number, data: Buffer): void;
  udpSocketReceive(id: number): Datagram[];
  udpSocketClose(id: number): boolean;
}

let binding: NativeBinding | undefined;

/** Loads the addon on first use, so commands that need no kernel access work without it. */
export function native(): NativeBinding {
  if (binding) return binding;
  // dist/src/native -> repository root
  const path = join(__dirname, '..', '..', '..', 'build', 'Release', 'strait.node');
  try {
    binding = require(path) as NativeBinding;
  } catch (err) {
    throw new Error(
      `the native addon ${path} cannot be loaded (${(err as Error).message}); build it with 'npm ci' or 'npm run build:native'`,
    );
  }
  binding.setErrorClasses(nativeErrorClasses);
  return binding;
}
