/* Sending a packet through the node's VXLAN collect_md device: the tunnel key names the remote end, and
 * the caller says which inner Ethernet addresses the frame gets.
 * - Intra-cluster overlay (strait_encap_overlay): addressed to the overlay MAC, every overlay device's
 *   own, so the receiving device accepts it as its own; the source is that MAC with the last bit
 *   flipped, as a VXLAN device drops frames that carry its own address as source (loop protection).
 * - Toward a peer gateway: the peer entry's MACs (struct strait_peer), the peering's wire format shared
 *   with the kernel fallback, whose tunnel device answers only to its own MAC. */
#pragma once

#include <stdbool.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>

#include "counters.h"

#define STRAIT_TUNNEL_TTL 64

/* `remote`: the remote end's IPv4 address, or 0 for an IPv6 underlay, where `remote6` is it. */
static __always_inline int strait_encap(struct __sk_buff *skb, const struct strait_config *cfg, __be32 remote,
					const struct strait_in6 *remote6, __u32 vni, const __u8 *dst_mac, const __u8 *src_mac)
{
	struct bpf_tunnel_key key = {};
	__u64 flags = 0;
	if (remote) {
		key.remote_ipv4 = bpf_ntohl(remote);
	} else {
		/* The kernel copies remote_ipv6 as it is (network order), where it converts remote_ipv4. */
		__builtin_memcpy(key.remote_ipv6, remote6->addr, sizeof(key.remote_ipv6));
		flags = BPF_F_TUNINFO_IPV6;
	}
	key.tunnel_id = vni;
	key.tunnel_ttl = STRAIT_TUNNEL_TTL;
	if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), flags))
		return strait_drop(STRAIT_DROP_TUNNEL);
	__u8 macs[2 * ETH_ALEN];
	__builtin_memcpy(macs, dst_mac, ETH_ALEN);
	__builtin_memcpy(macs + ETH_ALEN, src_mac, ETH_ALEN);
	if (bpf_skb_store_bytes(skb, 0, macs, sizeof(macs), 0))
		return strait_drop(STRAIT_DROP_TUNNEL);
	return bpf_redirect(cfg->overlay_ifindex, 0);
}

/* Whether the packet came in on the intra-cluster overlay VNI (from a node of ours), not on a peering's.
 * The key of a tunnel over IPv6 is read only with BPF_F_TUNINFO_IPV6 (the first read fails: EPROTO). */
static __always_inline bool strait_on_overlay_vni(struct __sk_buff *skb, const struct strait_config *cfg)
{
	struct bpf_tunnel_key key = {};
	if (bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0) && bpf_skb_get_tunnel_key(skb, &key, sizeof(key), BPF_F_TUNINFO_IPV6))
		return false;
	return key.tunnel_id == cfg->overlay_vni;
}

/* Whether the packet already carries a tunnel to be sent with (a program of ours set it before redirecting
 * it here). With valid flags, only "none" is EINVAL: a key over IPv6 read without BPF_F_TUNINFO_IPV6 fails
 * with EPROTO, and is one. */
static __always_inline bool strait_has_tunnel(struct __sk_buff *skb)
{
	struct bpf_tunnel_key key = {};
	return bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0) != -22 /* -EINVAL */;
}

/* To another node of the cluster on the overlay VNI, at `remote` (or `remote6`, as strait_encap). */
static __always_inline int strait_encap_overlay(struct __sk_buff *skb, const struct strait_config *cfg, __be32 remote,
						const struct strait_in6 *remote6)
{
	__u8 src[ETH_ALEN];
	__builtin_memcpy(src, cfg->overlay_mac, ETH_ALEN);
	src[ETH_ALEN - 1] ^= 1;
	return strait_encap(skb, cfg, remote, remote6, cfg->overlay_vni, cfg->overlay_mac, src);
}

/* To the cluster's active gateway, over the underlay's family. */
static __always_inline int strait_encap_to_gateway(struct __sk_buff *skb, const struct strait_config *cfg)
{
	return strait_encap_overlay(skb, cfg, cfg->gateway_addr, &cfg->gateway_addr6);
}
