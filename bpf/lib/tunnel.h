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

static __always_inline int strait_encap(struct __sk_buff *skb, const struct strait_config *cfg, __be32 remote, __u32 vni,
					const __u8 *dst_mac, const __u8 *src_mac)
{
	struct bpf_tunnel_key key = {};
	key.remote_ipv4 = bpf_ntohl(remote);
	key.tunnel_id = vni;
	key.tunnel_ttl = STRAIT_TUNNEL_TTL;
	if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), 0))
		return strait_drop(STRAIT_DROP_TUNNEL);
	__u8 macs[2 * ETH_ALEN];
	__builtin_memcpy(macs, dst_mac, ETH_ALEN);
	__builtin_memcpy(macs + ETH_ALEN, src_mac, ETH_ALEN);
	if (bpf_skb_store_bytes(skb, 0, macs, sizeof(macs), 0))
		return strait_drop(STRAIT_DROP_TUNNEL);
	return bpf_redirect(cfg->overlay_ifindex, 0);
}

/* Whether the packet came in on the intra-cluster overlay VNI (from a node of ours), not on a peering's. */
static __always_inline bool strait_on_overlay_vni(struct __sk_buff *skb, const struct strait_config *cfg)
{
	struct bpf_tunnel_key key = {};
	return bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0) == 0 && key.tunnel_id == cfg->overlay_vni;
}

/* To another node of the cluster on the overlay VNI. */
static __always_inline int strait_encap_overlay(struct __sk_buff *skb, const struct strait_config *cfg, __be32 remote)
{
	__u8 src[ETH_ALEN];
	__builtin_memcpy(src, cfg->overlay_mac, ETH_ALEN);
	src[ETH_ALEN - 1] ^= 1;
	return strait_encap(skb, cfg, remote, cfg->overlay_vni, cfg->overlay_mac, src);
}
