/**
 * The node's VXLAN device in external (collect_md) mode: programs set the tunnel key per packet and
 * redirect to it, so one device carries the intra-cluster overlay and every tunnel to a peer gateway.
 * All of them share one MAC (inner frames are addressed to it; these are L3 tunnels, nothing bridges).
 */
import { ip } from '../kernel/command';

export interface OverlayDeviceSpec {
  name: string;
  port: number;
  mac: string;
}

interface LinkDetails {
  address?: string;
  linkinfo?: { info_kind?: string; info_data?: { external?: boolean; port?: number } };
}

const netnsName = (netns?: string) => netns?.replace(/^\/run\/netns\//, '');

function readDevice(name: string, netns?: string): LinkDetails | undefined {
  try {
    return (JSON.parse(ip(['-j', '-d', 'link', 'show', 'dev', name], netnsName(netns))) as LinkDetails[])[0];
  } catch {
    return undefined;
  }
}

function matches(link: LinkDetails, spec: OverlayDeviceSpec): boolean {
  const info = link.linkinfo;
  return info?.info_kind === 'vxlan' && info.info_data?.external === true && info.info_data.port === spec.port && link.address === spec.mac;
}

/** Creates the device, or recreates it when it differs from the spec; returns whether it changed. */
export function ensureOverlayDevice(spec: OverlayDeviceSpec, netns?: string): boolean {
  const ns = netnsName(netns);
  const existing = readDevice(spec.name, netns);
  if (existing && matches(existing, spec)) {
    ip(['link', 'set', spec.name, 'up'], ns);
    return false;
  }
  if (existing) ip(['link', 'del', spec.name], ns);
  ip(['link', 'add', spec.name, 'address', spec.mac, 'type', 'vxlan', 'external', 'dstport', String(spec.port)], ns);
  ip(['link', 'set', spec.name, 'up'], ns);
  return true;
}

/** Deletes the device; returns whether it existed. */
export function removeOverlayDevice(name: string, netns?: string): boolean {
  if (!readDevice(name, netns)) return false;
  ip(['link', 'del', name], netnsName(netns));
  return true;
}
