/**
 * Tunnel devices (VXLAN, xfrm interfaces) as desired state: read what the namespace has, create what is
 * missing, recreate what differs, delete what is no longer wanted, among the devices the caller owns (a
 * name predicate), so the eBPF overlay (`strait0`) and the fallback's devices never touch each other's,
 * or anyone else's. A peer tunnel that changes kind (VXLAN to IPsec) keeps its name and is recreated; a
 * VXLAN device whose MTU alone differs gets the new one in place, without losing a packet.
 */
import { type NativeLink, type NetlinkChange, applyNetlink, dumpLinks } from './rtnetlink';

interface VxlanCommon {
  name: string;
  port: number;
  mac: string;
  /** The tunnel MTU (src/nodespec/tunnel-mtu.ts); absent: the kernel's default. */
  mtu?: number;
}

/**
 * Metadata mode (collect_md): programs set the tunnel key of each packet. NOARP: what the stack routes
 * into it (a service proxy's DNAT, docs/datapath.md) needs no neighbour, which no one could answer; the
 * device's egress program gives it its tunnel.
 */
interface ExternalVxlanDevice extends VxlanCommon {
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

type VxlanDevice = ExternalVxlanDevice | UnicastVxlanDevice;

/** An xfrm interface: routes into it are encrypted by the xfrm states and policies carrying its if_id. */
interface XfrmDevice {
  name: string;
  /** Non-zero; ties the device to its policies and states. */
  ifId: number;
  mtu: number;
}

export type TunnelDevice = VxlanDevice | XfrmDevice;

const isXfrm = (want: TunnelDevice): want is XfrmDevice => 'ifId' in want;

/** Whether `link` is the device `want` describes, its MTU aside for VXLAN (set in place, see `reconcileTunnelDevices`). */
function matches(link: NativeLink, want: TunnelDevice): boolean {
  if (isXfrm(want)) return link.kind === 'xfrm' && link.xfrmIfId === want.ifId && link.mtu === want.mtu;
  const d = link.vxlan;
  if (link.kind !== 'vxlan' || d?.port !== want.port || link.address !== want.mac) return false;
  if ('external' in want) return d.external;
  return !d.external && d.id === want.vni && !d.learning && d.local === want.local && d.remote === want.remote;
}

/** A new device, up: learning off for VXLAN (the FDB is Strait's), as `ip link add ... nolearning`. */
function addChange(want: TunnelDevice): NetlinkChange {
  if (isXfrm(want)) return { kind: 'link', op: 'add', name: want.name, type: 'xfrm', mtu: want.mtu, ifId: want.ifId, up: true };
  const mode =
    'external' in want
      ? { external: true }
      : { vni: want.vni, ...(want.local ? { local: want.local } : {}), ...(want.remote ? { remote: want.remote } : {}) };
  return {
    kind: 'link',
    op: 'add',
    name: want.name,
    type: 'vxlan',
    address: want.mac,
    ...(want.mtu !== undefined ? { mtu: want.mtu } : {}),
    ...mode,
    port: want.port,
    up: true,
    ...('external' in want ? { noarp: true } : {}),
  };
}

export interface DeviceChanges {
  created: string[];
  recreated: string[];
  deleted: string[];
  /** Kept, with a new MTU. */
  mtuChanged: string[];
}

/**
 * `ns`: a namespace by name (/run/netns/NAME); default: ours. `owned`: which device names are the
 * caller's. All the changes go in one rtnetlink batch; if the kernel refuses any, the first refusal is
 * thrown (a NetlinkError naming the link), after the others were applied.
 */
export function reconcileTunnelDevices(wanted: readonly TunnelDevice[], owned: (name: string) => boolean, ns?: string): DeviceChanges {
  const links = dumpLinks(ns).filter((l) => owned(l.ifname));
  const changes: DeviceChanges = { created: [], recreated: [], deleted: [], mtuChanged: [] };
  const batch: NetlinkChange[] = [];
  for (const link of links) {
    if (wanted.some((w) => w.name === link.ifname)) continue;
    batch.push({ kind: 'link', op: 'del', name: link.ifname });
    changes.deleted.push(link.ifname);
  }
  for (const want of wanted) {
    const existing = links.find((l) => l.ifname === want.name);
    if (existing && matches(existing, want)) {
      const mtu = want.mtu !== undefined && existing.mtu !== want.mtu ? want.mtu : undefined;
      if (mtu !== undefined) changes.mtuChanged.push(want.name);
      // An external device an earlier build made without NOARP gets it in place.
      const noarp = 'external' in want && !existing.noarp;
      if (mtu !== undefined || !existing.up || noarp)
        batch.push({
          kind: 'link',
          op: 'set',
          name: want.name,
          up: true,
          ...(mtu === undefined ? {} : { mtu }),
          ...(noarp ? { noarp } : {}),
        });
      continue;
    }
    if (existing) batch.push({ kind: 'link', op: 'del', name: want.name });
    batch.push(addChange(want));
    (existing ? changes.recreated : changes.created).push(want.name);
  }
  const refused = applyNetlink(batch, ns).find((r) => !r.ok);
  if (refused && !refused.ok) throw refused.error;
  return changes;
}
