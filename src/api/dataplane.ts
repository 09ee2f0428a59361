/** The dataplanes, as documents, flags and metrics name them: eBPF, and the kernel fallback (VXLAN or IPsec, policy routing, nftables). */
export const dataplanes = ['ebpf', 'kernel'] as const;
export type Dataplane = (typeof dataplanes)[number];
