/* The IPv6 datapath: the decisions of datapath.h (docs/datapath.md, "Decisions") for an IPv6 inner
 * packet, on the IPv6 maps; the tunnel is IPv4's (the peer's endpoint, of the underlay's family, and VNI
 * in strait_peers), its MTU the same (mtu6.h). Hub transit goes on in a program of its own, strait_transit6 (transit6.h),
 * reached by tail call: these programs have no stack left for it. */
#pragma once

#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "common.h"
#include "counters.h"
#include "forward.h"
#include "in6.h"
#include "maps.h"
#include "mtu6.h"
#include "nat6.h"
#include "parse6.h"
#include "tail.h"
#include "tunnel.h"

/* The ethertype as the device read it: no load. */
static __always_inline bool strait_is_ipv6(const struct __sk_buff *skb)
{
	return skb->protocol == bpf_htons(ETH_P_IPV6);
}

/* A route matched, so the packet is ours to forward: what its parse refuses is dropped and counted. */
static __always_inline int strait_refuse6(int parsed)
{
	return strait_drop(parsed == STRAIT_PKT_EXTHDRS ? STRAIT_DROP_EXTHDRS : STRAIT_DROP_MALFORMED);
}

/* Our source in P's view (from our PodCIDR or ExternalCIDR, the same host in P's view of it) into `out`: -1, or
 * the reason to drop the packet. */
static __always_inline int strait_source6_toward(const struct strait_in6 *saddr, const struct strait_config6 *cfg6,
						  const struct strait_peer6 *peer6, struct strait_in6 *out)
{
	const struct strait_cidr6 *view = 0;
	*out = *saddr;
	if (strait_in6(saddr, &cfg6->pod_cidr))
		view = &peer6->local_nat_pod;
	else if (strait_in6(saddr, &cfg6->external_cidr))
		view = &peer6->local_nat_external;
	if (!view)
		return -1;
	/* As IPv4's: never into a view the peering lacks. */
	if (!strait_has6(view))
		return STRAIT_DROP_NO_PEER;
	*out = strait_translate6(saddr, view);
	return -1;
}

/* toPeer(P): our source gets P's view of it; the destination is already in P's view. */
static __always_inline int strait_to_peer6(struct __sk_buff *skb, const struct strait_config *cfg, const struct strait_pkt6 *p,
					   __u32 peer_id)
{
	const struct strait_peer *peer = bpf_map_lookup_elem(&strait_peers, &peer_id);
	const struct strait_peer6 *peer6 = bpf_map_lookup_elem(&strait_peers6, &peer_id);
	if (!peer || !peer6)
		return strait_drop(STRAIT_DROP_NO_PEER);
	const struct strait_config6 *cfg6 = strait_config6_get();
	if (!cfg6)
		return strait_drop(STRAIT_DROP_NO_CONFIG);
	struct strait_in6 saddr;
	int refused = strait_source6_toward(&p->saddr, cfg6, peer6, &saddr);
	if (refused >= 0)
		return strait_drop(refused);
	if (strait_apply6(skb, p, &saddr, &p->daddr))
		return strait_drop(STRAIT_DROP_CSUM);
	return strait_send_to_peer(skb, cfg, peer, peer_id, &strait_peer_counters6);
}

/* The destination in our view of a packet from peer P (addressed in P's view of us), through the
 * NatMapping for an ExternalCIDR address; `to_transit` set when it is our transit address (a reply of a
 * transit flow: strait_snat6 knows where it goes). -1, or the reason to drop the packet. */
static __always_inline int strait_from_peer6_dst(const struct strait_pkt6 *p, const struct strait_peer6 *peer6,
						 const struct strait_config6 *cfg6, struct strait_in6 *daddr, bool *to_transit)
{
	/* As IPv4's: never into a home network that is none. */
	if (strait_in6(&p->daddr, &peer6->local_nat_pod) && strait_has6(&cfg6->pod_cidr)) {
		*daddr = strait_translate6(&p->daddr, &cfg6->pod_cidr);
		return -1;
	}
	if (!strait_in6(&p->daddr, &peer6->local_nat_external) || !strait_has6(&cfg6->external_cidr))
		return STRAIT_DROP_NOT_OURS;
	*daddr = strait_translate6(&p->daddr, &cfg6->external_cidr);
	if (!strait_in6_zero(&cfg6->transit_addr) && strait_in6_same(daddr, &cfg6->transit_addr)) {
		*to_transit = true;
		return -1;
	}
	const struct strait_in6 *real = bpf_map_lookup_elem(&strait_natmap6, daddr);
	if (!real)
		return STRAIT_DROP_NO_NATMAPPING;
	*daddr = *real;
	return -1;
}

/* Hub transit, in strait_transit6; dropped as TRANSIT6 when that program is missing from strait_progs. */
static __always_inline int strait_tail_transit6(struct __sk_buff *skb)
{
	bpf_tail_call(skb, &strait_progs, STRAIT_PROG_TRANSIT6);
	return strait_drop(STRAIT_DROP_TRANSIT6);
}

/* A packet from peer P, addressed in P's view of us. */
static __always_inline int strait_from_peer6(struct __sk_buff *skb, const struct strait_config *cfg, const struct strait_pkt6 *p,
					     __u32 peer_id)
{
	const struct strait_peer6 *peer6 = bpf_map_lookup_elem(&strait_peers6, &peer_id);
	if (!peer6)
		return strait_drop(STRAIT_DROP_NO_PEER);
	const struct strait_config6 *cfg6 = strait_config6_get();
	if (!cfg6)
		return strait_drop(STRAIT_DROP_NO_CONFIG);
	struct strait_in6 daddr;
	bool to_transit = false;
	int refused = strait_from_peer6_dst(p, peer6, cfg6, &daddr, &to_transit);
	if (refused >= 0)
		return strait_drop(refused);
	if (to_transit)
		return strait_tail_transit6(skb);
	/* As IPv4's: a destination in our PodCIDR has no onward route, one elsewhere no node. */
	bool ours = strait_in6(&daddr, &cfg6->pod_cidr);
	if (!ours && strait_lpm6(&strait_routes6, &daddr))
		return strait_tail_transit6(skb);
	if (strait_apply6(skb, p, &p->saddr, &daddr))
		return strait_drop(STRAIT_DROP_CSUM);
	strait_count_peer(&strait_peer_counters6, peer_id, skb->len, false);
	return strait_deliver(skb, cfg, ours ? strait_lpm6(&strait_nodes6, &daddr) : 0);
}

/* strait_pod_ingress for IPv6. */
static __always_inline int strait_pod_ingress6(struct __sk_buff *skb)
{
	struct strait_pkt6 p;
	int parsed = strait_parse6(skb, &p);
	if (parsed == STRAIT_PKT_OTHER)
		return TC_ACT_OK;
	const struct strait_route *dst = strait_lpm6(&strait_routes6, &p.daddr);
	if (!dst)
		return TC_ACT_OK;
	const struct strait_config *cfg = strait_config_get();
	if (!cfg)
		return strait_drop(STRAIT_DROP_NO_CONFIG);
	if (parsed != STRAIT_PKT_OK)
		return strait_refuse6(parsed);
	/* Everything from here on is encapsulated: it must fit the tunnel as the pod sent it. */
	if (strait_too_big6(skb, &p, cfg->tunnel_mtu))
		return strait_packet_too_big(skb, &p, cfg->tunnel_mtu);
	if (strait_clamp_mss6(skb, &p, cfg->tunnel_mtu))
		return strait_drop(STRAIT_DROP_CSUM);
	if (!(cfg->flags & STRAIT_F_GATEWAY))
		return strait_encap_to_gateway(skb, cfg);
	return strait_to_peer6(skb, cfg, &p, dst->peer_id);
}

/* strait_overlay_ingress for IPv6, on a gateway or standby (`cfg`). */
static __always_inline int strait_overlay_ingress6(struct __sk_buff *skb, const struct strait_config *cfg)
{
	struct strait_pkt6 p;
	int parsed = strait_parse6(skb, &p);
	if (parsed == STRAIT_PKT_OTHER)
		return TC_ACT_OK;
	const struct strait_route *src = strait_lpm6(&strait_routes6, &p.saddr);
	const struct strait_route *dst = src ? 0 : strait_lpm6(&strait_routes6, &p.daddr);
	if (!src && !dst)
		return TC_ACT_OK;
	/* Translated already by a gateway of ours, which delivers it to its pod here (as IPv4's). */
	if (src && strait_on_overlay_vni(skb, cfg))
		return TC_ACT_OK;
	if (parsed != STRAIT_PKT_OK)
		return strait_refuse6(parsed);
	/* From a peer: its SYN or SYN-ACK gets an MSS that fits our tunnels too (as IPv4's). */
	if (strait_clamp_mss6(skb, &p, cfg->tunnel_mtu))
		return strait_drop(STRAIT_DROP_CSUM);
	if (src)
		return strait_from_peer6(skb, cfg, &p, src->peer_id);
	return strait_to_peer6(skb, cfg, &p, dst->peer_id);
}
