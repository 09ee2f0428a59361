/* Where a translated packet goes, whichever its IP family: to a peer's gateway, or to one of our pods
 * (on this node, or on the node that hosts it). */
#pragma once

#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "common.h"
#include "counters.h"
#include "in6.h"
#include "tunnel.h"

/* `counters`: the packet's family's (strait_count_peer). */
static __always_inline int strait_send_to_peer(struct __sk_buff *skb, const struct strait_config *cfg, const struct strait_peer *peer,
					       __u32 peer_id, void *counters)
{
	strait_count_peer(counters, peer_id, skb->len, true);
	return strait_encap(skb, cfg, peer->endpoint, &peer->endpoint6, peer->vni, peer->dst_mac, peer->src_mac);
}

/* Whether `node` is this one, by the underlay address of its family. */
static __always_inline bool strait_is_this_node(const struct strait_config *cfg, const struct strait_node *node)
{
	return node->underlay ? node->underlay == cfg->node_addr : strait_in6_same(&node->underlay6, &cfg->node_addr6);
}

/* `node`: the one hosting the pod (strait_nodes), if known. */
static __always_inline int strait_deliver(struct __sk_buff *skb, const struct strait_config *cfg, const struct strait_node *node)
{
	/* Symmetric routing: a pod on another node gets the packet from us, the gateway its reply goes to. */
	if (node && !strait_is_this_node(cfg, node))
		return strait_encap_overlay(skb, cfg, node->underlay, &node->underlay6);
	/* The peer addressed the frame to our tunnel MAC toward it (the peering's wire format), not to the
	 * overlay device's, so the device marked it for another host and IP would drop it: it is ours. */
	if (skb->pkt_type == PACKET_OTHERHOST)
		bpf_skb_change_type(skb, PACKET_HOST);
	return TC_ACT_OK;
}
