/* Sending a packet through the node's VXLAN collect_md device: the tunnel key names the remote end, and
 * the inner frame is addressed to the overlay MAC so the receiving device accepts it as its own. Its
 * source is that MAC with the last bit flipped: a VXLAN device drops frames that carry its own address
 * as source (loop protection), and every overlay device has the same address. */
#pragma once

#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>

#include "counters.h"

#define STRAIT_TUNNEL_TTL 64

static __always_inline int strait_encap(struct __sk_buff *skb, const struct strait_config *cfg, __be32 remote, __u32 vni)
{
	struct bpf_tunnel_key key = {};
	key.remote_ipv4 = bpf_ntohl(remote);
	key.tunnel_id = vni;
	key.tunnel_ttl = STRAIT_TUNNEL_TTL;
	if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), 0))
		return strait_drop(STRAIT_DROP_TUNNEL);
	__u8 macs[2 * ETH_ALEN];
	__builtin_memcpy(macs, cfg->overlay_mac, ETH_ALEN);
	__builtin_memcpy(macs + ETH_ALEN, cfg->overlay_mac, ETH_ALEN);
	macs[2 * ETH_ALEN - 1] ^= 1;
	if (bpf_skb_store_bytes(skb, 0, macs, sizeof(macs), 0))
		return strait_drop(STRAIT_DROP_TUNNEL);
	return bpf_redirect(cfg->overlay_ifindex, 0);
}
