/**
 * Tunnel devices (VXLAN, xfrm interfaces) as desired state: read what the namespace has, create what is
 * missing, recreate what differs, delete what is no longer wanted, among the devices the caller owns (a
 * name predicate), so the eBPF overlay (`strait0`) and the fallback's devices never touch each other's,
 * or anyone else's. A peer tunnel that changes kind (VXLAN to IPsec) keeps its name and is recreated; a
 * VXLAN device whose MTU alone differs gets the new one in place, without losing a packet.
 */
import { ip } from './command';

interface VxlanCommon {
  name: string;
  port: number;
  mac: string;
  /** The tunnel MTU (src/nodespec/tunnel-mtu.ts); absent: the kernel's default. */
  mtu?: number;
}

/** Metadata mode (collect_md): programs set the tunnel key of each packet. */
export interface ExternalVxlanDevice extends VxlanCommon {
  external: true;
}

/** Classic mode: one VNI, and for point-to-point tunnels the other end. */
export interface UnicastVxlanDevice extends VxlanCommon {
  vni: number;
  /** Our address the device sends from (the overlay: the node's underlay address). */
  local?: string;
  /** Point-to-point tunnels: the other end (the source is whatever routing picks toward it). */
  remote?: string;
}

export type VxlanDevice = ExternalVxlanDevice | UnicastVxlanDevice;

/** An xfrm interface: routes into it are encrypted by the xfrm states and policies carrying its if_id. */
export interface XfrmDevice {
  name: string;
  /** Non-zero; ties the device to its policies and states. */
  ifId: number;
  mtu: number;
}

export type TunnelDevice = VxlanDevice | XfrmDevice;

interface LinkJson {
  ifname: string;
  address?: string;
  flags?: string[];
  mtu?: number;
  linkinfo?: {
    info_kind?: string;
    // ip prints an xfrm if_id as a hex string ("0x2a").
    info_data?: { id?: number; port?: number; local?: string; remote?: string; learning?: boolean; external?: boolean; if_id?: string | number };
  };
}

const isXfrm = (want: TunnelDevice): want is XfrmDevice => 'ifId' in want;

/** Whether `link` is the device `want` describes, its MTU aside for VXLAN (set in place, see `reconcileTunnelDevices`). */
function matches(link: LinkJson, want: TunnelDevice): boolean {
  const d = link.linkinfo?.info_data;
  if (isXfrm(want)) return link.linkinfo?.info_kind === 'xfrm' && Number(d?.if_id) === want.ifId && link.mtu === want.mtu;
  if (link.linkinfo?.info_kind !== 'vxlan' || d?.port !== want.port || link.address !== want.mac) return false;
  if ('external' in want) return d.external === true;
  return d.external !== true && d.id === want.vni && d.learning === false && d.local === want.local && d.remote === want.remote;
}

function addArgs(want: TunnelDevice): string[] {
  if (isXfrm(want)) return ['link', 'add', want.name, 'mtu', String(want.mtu), 'type', 'xfrm', 'if_id', String(want.ifId)];
  const mtu = want.mtu !== undefined ? ['mtu', String(want.mtu)] : [];
  const mode = 'external' in want
    ? ['external']
    : ['id', String(want.vni), ...(want.local ? ['local', want.local] : []), ...(want.remote ? ['remote', want.remote] : [])];
  return ['link', 'add', want.name, 'address', want.mac, ...mtu, 'type', 'vxlan', ...mode, 'dstport', String(want.port), ...('external' in want ? [] : ['nolearning'])];
}

export interface DeviceChanges {
  created: string[];
  recreated: string[];
  deleted: string[];
  /** Kept, with a new MTU. */
  mtuChanged: string[];
}

/** `ns`: a namespace by name, as for `ip -n`; default: ours. `owned`: which device names are the caller's. */
export function reconcileTunnelDevices(wanted: readonly TunnelDevice[], owned: (name: string) => boolean, ns?: string): DeviceChanges {
  const links = (JSON.parse(ip(['-j', '-d', 'link', 'show'], ns)) as LinkJson[]).filter((l) => owned(l.ifname));
  const changes: DeviceChanges = { created: [], recreated: [], deleted: [], mtuChanged: [] };
  for (const link of links) {
    if (wanted.some((w) => w.name === link.ifname)) continue;
    ip(['link', 'del', link.ifname], ns);
    changes.deleted.push(link.ifname);
  }
  for (const want of wanted) {
    const existing = links.find((l) => l.ifname === want.name);
    if (existing && matches(existing, want)) {
      if (want.mtu !== undefined && existing.mtu !== want.mtu) {
        ip(['link', 'set', want.name, 'mtu', String(want.mtu)], ns);
        changes.mtuChanged.push(want.name);
      }
      if (!existing.flags?.includes('UP')) ip(['link', 'set', want.name, 'up'], ns);
      continue;
    }
    if (existing) ip(['link', 'del', want.name], ns);
    ip(addArgs(want), ns);
    ip(['link', 'set', want.name, 'up'], ns);
    (existing ? changes.recreated : changes.created).push(want.name);
  }
  return changes;
}
