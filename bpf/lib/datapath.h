/* The datapath's decisions, docs/datapath.md ("Decisions") step by step. The entry programs in
 * bpf/strait.c are thin wrappers, so test objects can wrap the same logic to observe what a packet
 * cannot show (the tunnel key). */
#pragma once

#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "common.h"
#include "counters.h"
#include "datapath6.h"
#include "forward.h"
#include "maps.h"
#include "mtu.h"
#include "nat.h"
#include "parse.h"
#include "snat.h"
#include "tunnel.h"

/* toPeer(P): our source gets P's view of it; the destination is already in P's view. */
static __always_inline int strait_to_peer(struct __sk_buff *skb, const struct strait_config *cfg, const struct strait_pkt *p,
					  struct strait_xlate *x, __u32 peer_id)
{
	const struct strait_peer *peer = bpf_map_lookup_elem(&strait_peers, &peer_id);
	if (!peer)
		return strait_drop(STRAIT_DROP_NO_PEER);
	const struct strait_cidr *view = 0;
	if (strait_in(x->saddr, &cfg->pod_cidr))
		view = &peer->local_nat_pod;
	else if (strait_in(x->saddr, &cfg->external_cidr))
		view = &peer->local_nat_external;
	if (view) {
		/* A peering without IPv4 has no IPv4 routes; its entry can say so before a reconcile has
		 * removed them (the entry is written first): never send our address untranslated. */
		if (!strait_has(view))
			return strait_drop(STRAIT_DROP_NO_PEER);
		x->saddr = strait_translate(x->saddr, view);
	}
	if (strait_apply(skb, p, x))
		return strait_drop(STRAIT_DROP_CSUM);
	return strait_send_to_peer(skb, cfg, peer, peer_id, &strait_peer_counters);
}

/* Step 1 of strait_from_overlay: a packet from peer P, addressed in P's view of us. */
static __always_inline int strait_from_peer(struct __sk_buff *skb, const struct strait_config *cfg, const struct strait_pkt *p,
					    __u32 peer_id)
{
	const struct strait_peer *peer = bpf_map_lookup_elem(&strait_peers, &peer_id);
	if (!peer)
		return strait_drop(STRAIT_DROP_NO_PEER);
	struct strait_xlate x = strait_xlate_of(p);
	bool reply = false;
	/* A home without IPv4 has no network to translate into (a stale peer entry may still have a view). */
	if (strait_in(p->daddr, &peer->local_nat_pod) && strait_has(&cfg->pod_cidr)) {
		x.daddr = strait_translate(p->daddr, &cfg->pod_cidr);
	} else if (strait_in(p->daddr, &peer->local_nat_external) && strait_has(&cfg->external_cidr)) {
		x.daddr = strait_translate(p->daddr, &cfg->external_cidr);
		if (cfg->transit_addr && x.daddr == cfg->transit_addr) {
			if (p->icmp_error ? strait_snat_reverse_error(p, &x, cfg->transit_addr) : strait_snat_reverse(p, &x))
				return strait_drop(STRAIT_DROP_TRANSIT_STATE);
			reply = true;
		} else {
			const __be32 *real = bpf_map_lookup_elem(&strait_natmap, &x.daddr);
			if (!real)
				return strait_drop(STRAIT_DROP_NO_NATMAPPING);
			x.daddr = *real;
		}
	} else {
		return strait_drop(STRAIT_DROP_NOT_OURS);
	}

	/* The IPAM keeps remote prefixes (home view) out of our PodCIDR, and pod prefixes of our nodes are
	 * inside it: a destination there has no onward route to look up, one elsewhere no node. */
	bool ours = strait_in(x.daddr, &cfg->pod_cidr);
	const struct strait_route *onward = ours ? 0 : strait_lpm(&strait_routes, x.daddr);
	if (onward) {
		/* Hub transit. A reflected endpoint answers from its ExternalCIDR address (stateless);
		 * anything else needs a source the other peer can route back to us. */
		const __be32 *ext = bpf_map_lookup_elem(&strait_natmap_rev, &x.saddr);
		if (!ext && reply && p->icmp_error) {
			/* An error from a router on the way appears to come from the address the flow went to. */
			ext = bpf_map_lookup_elem(&strait_natmap_rev, &p->quote.daddr);
			x.src_of = p->quote.daddr;
		}
		if (ext)
			x.saddr = *ext;
		else if (reply || strait_snat_forward(p, &x, cfg->transit_addr))
			return strait_drop(STRAIT_DROP_TRANSIT_STATE);
		strait_count_peer(&strait_peer_counters, peer_id, skb->len, false);
		return strait_to_peer(skb, cfg, p, &x, onward->peer_id);
	}
	if (strait_apply(skb, p, &x))
		return strait_drop(STRAIT_DROP_CSUM);
	strait_count_peer(&strait_peer_counters, peer_id, skb->len, false);
	return strait_deliver(skb, cfg, ours ? strait_lpm(&strait_nodes, x.daddr) : 0);
}

/* Every node: steer traffic for a peer (worker: to the gateway; gateway: toPeer). */
static __always_inline int strait_pod_ingress(struct __sk_buff *skb)
{
	struct strait_pkt p;
	int parsed = strait_parse(skb, &p);
	if (parsed == STRAIT_PKT_OTHER)
		return strait_is_ipv6(skb) ? strait_pod_ingress6(skb) : TC_ACT_OK;
	const struct strait_route *dst = strait_lpm(&strait_routes, p.daddr);
	if (!dst)
		return TC_ACT_OK;
	const struct strait_config *cfg = strait_config_get();
	if (!cfg)
		return strait_drop(STRAIT_DROP_NO_CONFIG);
	if (parsed == STRAIT_PKT_MALFORMED)
		return strait_drop(STRAIT_DROP_MALFORMED);
	/* Everything from here on is encapsulated: it must fit the tunnel as the pod sent it. Over an IPv6
	 * underlay DF or not: the sender learns the path MTU and fragments to fit. No ICMP error is sent
	 * about a later fragment (RFC 1122, 3.2.2): it is dropped, its first fragment answered. */
	if (strait_too_big(skb, &p, cfg->tunnel_mtu, strait_outer_fragments(cfg)))
		return p.later_frag ? strait_drop(STRAIT_DROP_TOO_BIG) : strait_frag_needed(skb, cfg, &p, cfg->tunnel_mtu);
	if (strait_clamp_mss(skb, &p, cfg->tunnel_mtu))
		return strait_drop(STRAIT_DROP_CSUM);
	if (!(cfg->flags & STRAIT_F_GATEWAY))
		return strait_encap_to_gateway(skb, cfg);
	struct strait_xlate x = strait_xlate_of(&p);
	return strait_to_peer(skb, cfg, &p, &x, dst->peer_id);
}

/* The overlay device's TC egress. What the stack routed into the device itself has no tunnel yet: a pod's
 * connection to a service address that a service proxy (kube-proxy's DNAT) turned into a peer's address,
 * after strait_from_pod had let it pass. It takes the pod path from here (steered to the gateway, or
 * translated and tunnelled by it). What a program of ours redirected here carries its tunnel: it passes.
 * What came in on the overlay itself is never sent back into it (two nodes that each take the other for
 * the gateway, for a moment of a handover, would bounce it until its TTL ran out): without a tunnel, the
 * device drops it. The pod path's ICMP errors (too big) are not met here: the device's MTU is the tunnel
 * MTU, so the stack answers first. */
static __always_inline int strait_overlay_egress(struct __sk_buff *skb)
{
	if (strait_has_tunnel(skb))
		return TC_ACT_OK;
	const struct strait_config *cfg = strait_config_get();
	if (cfg && skb->ingress_ifindex == cfg->overlay_ifindex)
		return TC_ACT_OK;
	return strait_pod_ingress(skb);
}

/* Gateway and standbys; a worker lets the kernel deliver to the pod. */
static __always_inline int strait_overlay_ingress(struct __sk_buff *skb)
{
	const struct strait_config *cfg = strait_config_get();
	if (!cfg || !(cfg->flags & (STRAIT_F_GATEWAY | STRAIT_F_STANDBY)))
		return TC_ACT_OK;
	/* IPv6 first, by the ethertype the device read: no IPv4 parse to fail first. */
	if (strait_is_ipv6(skb))
		return strait_overlay_ingress6(skb, cfg);
	struct strait_pkt p;
	int parsed = strait_parse(skb, &p);
	if (parsed == STRAIT_PKT_OTHER)
		return TC_ACT_OK;
	const struct strait_route *src = strait_lpm(&strait_routes, p.saddr);
	const struct strait_route *dst = src ? 0 : strait_lpm(&strait_routes, p.daddr);
	if (!src && !dst)
		return TC_ACT_OK;
	/* From a remote source on our own overlay VNI: a gateway of ours translated it already and delivers
	 * it to its pod here (a standby, or the gateway, that a peer's probes did not choose). */
	if (src && strait_on_overlay_vni(skb, cfg))
		return TC_ACT_OK;
	if (parsed == STRAIT_PKT_MALFORMED)
		return strait_drop(STRAIT_DROP_MALFORMED);
	/* From a peer: its SYN or SYN-ACK gets an MSS that fits our tunnels too (the peer's may be larger).
	 * Toward a peer: a worker clamped it already, so this changes nothing. */
	if (strait_clamp_mss(skb, &p, cfg->tunnel_mtu))
		return strait_drop(STRAIT_DROP_CSUM);
	if (src)
		return strait_from_peer(skb, cfg, &p, src->peer_id);
	struct strait_xlate x = strait_xlate_of(&p);
	return strait_to_peer(skb, cfg, &p, &x, dst->peer_id);
}
