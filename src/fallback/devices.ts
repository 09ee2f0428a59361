/**
 * The fallback's VXLAN devices: read what the namespace has, create what is missing, recreate what
 * differs, delete Strait's devices that are no longer wanted. Only names Strait owns are ever touched
 * (`strait.vxlan`, `stp` + 8 hex digits).
 */
import { ip } from '../kernel/command';
import type { VxlanDevicePlan } from './routing-plan';

export const isStraitDevice = (name: string) => name === 'strait.vxlan' || /^stp[0-9a-f]{8}$/.test(name);

interface LinkJson {
  ifname: string;
  address?: string;
  flags?: string[];
  linkinfo?: { info_kind?: string; info_data?: { id?: number; port?: number; local?: string; remote?: string; learning?: boolean } };
}

const netnsName = (netns?: string) => netns?.replace(/^\/run\/netns\//, '');

function matches(link: LinkJson, plan: VxlanDevicePlan): boolean {
  const d = link.linkinfo?.info_data;
  return link.linkinfo?.info_kind === 'vxlan' && d?.id === plan.vni && d.port === plan.port && d.learning === false &&
    d.local === plan.local && d.remote === plan.remote && link.address === plan.mac;
}

export interface DeviceChanges {
  created: string[];
  recreated: string[];
  deleted: string[];
}

export function reconcileVxlanDevices(plans: readonly VxlanDevicePlan[], netns?: string): DeviceChanges {
  const ns = netnsName(netns);
  const links = (JSON.parse(ip(['-j', '-d', 'link', 'show'], ns)) as LinkJson[]).filter((l) => isStraitDevice(l.ifname));
  const changes: DeviceChanges = { created: [], recreated: [], deleted: [] };
  for (const link of links) {
    if (plans.some((p) => p.name === link.ifname)) continue;
    ip(['link', 'del', link.ifname], ns);
    changes.deleted.push(link.ifname);
  }
  for (const plan of plans) {
    const existing = links.find((l) => l.ifname === plan.name);
    if (existing && matches(existing, plan)) {
      if (!existing.flags?.includes('UP')) ip(['link', 'set', plan.name, 'up'], ns);
      continue;
    }
    if (existing) ip(['link', 'del', plan.name], ns);
    ip(['link', 'add', plan.name, 'address', plan.mac, 'type', 'vxlan', 'id', String(plan.vni),
      ...(plan.local ? ['local', plan.local] : []), ...(plan.remote ? ['remote', plan.remote] : []),
      'dstport', String(plan.port), 'nolearning'], ns);
    ip(['link', 'set', plan.name, 'up'], ns);
    (existing ? changes.recreated : changes.created).push(plan.name);
  }
  return changes;
}
