/**
 * The node's VXLAN device in external (collect_md) mode: programs set the tunnel key per packet and
 * redirect to it, so one device carries the intra-cluster overlay and every tunnel to a peer gateway.
 * All of them share one MAC (inner frames are addressed to it; these are L3 tunnels, nothing bridges).
 */
import { netnsNameOf } from '../../kernel/netns';
import { reconcileTunnelDevices } from '../../kernel/tunnel-devices';

export interface OverlayDeviceSpec {
  name: string;
  port: number;
  mac: string;
  /** The tunnel MTU: the kernel then answers an oversize DF packet routed into the device itself. */
  mtu: number;
}

/** Creates the device, or recreates it when it differs from the spec (its MTU: set in place); returns whether it changed. */
export function ensureOverlayDevice(spec: OverlayDeviceSpec, netns?: string): boolean {
  const changes = reconcileTunnelDevices([{ ...spec, external: true }], (name) => name === spec.name, netnsNameOf(netns));
  return changes.created.length + changes.recreated.length + changes.mtuChanged.length > 0;
}

/** Deletes the device; returns whether it existed. */
export function removeOverlayDevice(name: string, netns?: string): boolean {
  return reconcileTunnelDevices([], (n) => n === name, netnsNameOf(netns)).deleted.length > 0;
}
