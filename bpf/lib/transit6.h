/* IPv6 hub transit (docs/datapath.md, "IPv6 hub transit"): strait_transit6, which strait_from_overlay
 * tail-calls (tail.h) for a packet from peer P that goes on to peer Q, or that is addressed to our transit
 * address (a reply of such a flow). The decisions of IPv4's transit (datapath.h, strait_from_peer), on
 * strait_snat6 through the SNAT engine both families share (snat.h). A program of its own: the entry
 * programs have no stack left for the flow keys. It parses the packet again (the tail call keeps only the
 * skb); the caller clamped the MSS already. */
#pragma once

#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "common.h"
#include "counters.h"
#include "datapath6.h"
#include "forward.h"
#include "maps.h"
#include "mtu6.h"
#include "nat.h"
#include "nat6.h"
#include "parse6.h"
#include "snat.h"
#include "tunnel.h"

#define STRAIT_ICMP6_ECHO_REQUEST 128
#define STRAIT_ICMP6_ECHO_REPLY 129
#define STRAIT_IN6_LEN sizeof(struct strait_in6)

/* What transit reads beyond strait_pkt6 (kept out of it: the pod program has no stack to spare). */
struct strait_flow6 {
	struct strait_in6 quote_daddr; /* ICMPv6 error: the quoted destination */
	__u32 quote_ports;             /* ICMPv6 error: offset of the quoted TCP/UDP ports; 0: not carried */
	__be16 sport;                  /* TCP/UDP ports; ICMPv6 echo: the identifier in both */
	__be16 dport;
	__be16 quote_sport;
	__be16 quote_dport;
	__u8 quote_proto;
	bool echo;
	bool udp_nocsum; /* UDP with a zero checksum */
};

/* What a transit packet becomes (struct strait_xlate for IPv6). */
struct strait_xlate6 {
	struct strait_in6 saddr;
	struct strait_in6 daddr;
	/* ICMPv6 errors: a quoted destination equal to `src_of` (the address saddr stands for) becomes
	 * saddr; the quoted source port becomes `quote_sport`. */
	struct strait_in6 src_of;
	__be16 sport;
	__be16 dport;
	__be16 quote_sport;
};

/* Reads the ports (a later fragment has none) and, in an ICMPv6 error, what the quote says of its flow;
 * strait_parse6 checked that the headers are there. -1: unreadable. */
static __always_inline int strait_flow6_read(struct __sk_buff *skb, const struct strait_pkt6 *p, struct strait_flow6 *f)
{
	__builtin_memset(f, 0, sizeof(*f));
	if (p->later_frag)
		return 0;
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) {
		struct udphdr h; /* TCP: the ports, then the sequence number */
		if (strait_load(skb, p->l4, &h, sizeof(h)))
			return -1;
		f->sport = h.source;
		f->dport = h.dest;
		f->udp_nocsum = p->udp && h.check == 0;
		return 0;
	}
	if (p->proto != STRAIT_IPPROTO_ICMPV6)
		return 0;
	struct strait_icmphdr icmp;
	if (strait_load(skb, p->l4, &icmp, sizeof(icmp)))
		return -1;
	if (icmp.type == STRAIT_ICMP6_ECHO_REQUEST || icmp.type == STRAIT_ICMP6_ECHO_REPLY) {
		f->echo = true;
		f->sport = f->dport = icmp.id;
	}
	if (!p->quote)
		return 0;
	__u8 next;
	if (strait_load(skb, p->quote + offsetof(struct strait_ip6hdr, nexthdr), &next, sizeof(next)) ||
	    strait_load(skb, p->quote + offsetof(struct strait_ip6hdr, daddr), &f->quote_daddr, sizeof(f->quote_daddr)))
		return -1;
	f->quote_proto = next;
	__u32 l4 = p->quote + sizeof(struct strait_ip6hdr);
	__be16 ports[2];
	if ((next == IPPROTO_TCP || next == IPPROTO_UDP) && l4 + sizeof(ports) <= ETH_HLEN + p->ip_len) {
		if (strait_load(skb, l4, ports, sizeof(ports)))
			return -1;
		f->quote_ports = l4;
		f->quote_sport = ports[0];
		f->quote_dport = ports[1];
	}
	return 0;
}

/* Only what has ports (or an echo identifier) in this packet can be mapped back. */
static __always_inline bool strait_snat6_possible(const struct strait_pkt6 *p, const struct strait_flow6 *f)
{
	return !p->later_frag && (f->echo || p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP);
}

static __always_inline struct strait_snat_pkt strait_snat6_pkt_of(const struct strait_pkt6 *p, const struct strait_flow6 *f)
{
	return (struct strait_snat_pkt){ .proto = p->proto, .tcp_flags = p->tcp_flags, .echo = f->echo };
}

/* Forward: the source of `x` becomes transit:port, reusing the flow's port or allocating a free one. */
static __always_inline int strait_snat6_forward(const struct strait_pkt6 *p, const struct strait_flow6 *f, struct strait_xlate6 *x,
						const struct strait_in6 *transit)
{
	if (strait_in6_zero(transit) || !strait_snat6_possible(p, f))
		return -1;
	struct strait_snat_pkt sp = strait_snat6_pkt_of(p, f);
	struct strait_flow6_key fwd = {}, rev = {};
	strait_flow_fill(&fwd, STRAIT_IN6_LEN, &x->saddr, &x->daddr, x->sport, x->dport, p->proto);
	strait_flow_fill(&rev, STRAIT_IN6_LEN, &x->daddr, transit, 0, 0, p->proto);
	struct strait_snat6_entry back = { .addr = x->saddr, .port = x->sport };
	struct strait_snat6_entry out = { .addr = *transit };
	__be16 port = strait_snat_out(&strait_snat6, STRAIT_IN6_LEN, &sp, &fwd, &rev, &back, &out, x->dport);
	if (!port)
		return -1;
	x->saddr = *transit;
	if (f->echo)
		x->dport = port;
	x->sport = port;
	return 0;
}

/* Reverse: a reply to transit:port gets the original source back as its destination. */
static __always_inline int strait_snat6_reverse(const struct strait_pkt6 *p, const struct strait_flow6 *f, struct strait_xlate6 *x)
{
	if (!strait_snat6_possible(p, f))
		return -1;
	struct strait_snat_pkt sp = strait_snat6_pkt_of(p, f);
	struct strait_flow6_key rev = {}, fwd = {};
	strait_flow_fill(&rev, STRAIT_IN6_LEN, &x->saddr, &x->daddr, x->sport, x->dport, p->proto);
	struct strait_snat6_entry orig, out = {};
	if (strait_snat_in(&strait_snat6, STRAIT_IN6_LEN, &sp, &rev, &orig, &fwd, &out))
		return -1;
	x->daddr = orig.addr;
	if (f->echo)
		x->sport = orig.port;
	x->dport = orig.port;
	return 0;
}

/* An ICMPv6 error about a transit flow quotes our forward packet (source transit:port): the reply key is
 * read from the quote, and the quote gets the original source and port back. */
static __always_inline int strait_snat6_reverse_error(const struct strait_flow6 *f, struct strait_xlate6 *x, const struct strait_in6 *transit)
{
	if (!f->quote_ports)
		return -1;
	struct strait_flow6_key rev = {};
	strait_flow_fill(&rev, STRAIT_IN6_LEN, &f->quote_daddr, transit, f->quote_dport, f->quote_sport, f->quote_proto);
	const struct strait_snat6_entry *orig = bpf_map_lookup_elem(&strait_snat6, &rev);
	if (!orig)
		return -1;
	x->daddr = orig->addr;
	x->quote_sport = orig->port;
	return 0;
}

/* Applies `x`: the addresses (and an error's quote, its port too), then the ports or echo identifier. */
static __always_inline int strait_apply6_transit(struct __sk_buff *skb, const struct strait_pkt6 *p, const struct strait_flow6 *f,
						 const struct strait_xlate6 *x)
{
	if (strait_apply6_to(skb, p, &x->saddr, &x->daddr, &x->src_of, f->quote_ports, f->quote_sport, x->quote_sport))
		return -1;
	if (f->echo) {
		/* One identifier field: whichever side the translation changed. */
		__be16 id = x->sport != f->sport ? x->sport : x->dport;
		return strait_rewrite_port_at(skb, p->l4_csum, false, false, p->l4 + offsetof(struct strait_icmphdr, id), f->sport, id);
	}
	if (p->later_frag || (p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP))
		return 0;
	if (strait_rewrite_port_at(skb, p->l4_csum, p->udp, f->udp_nocsum, p->l4 + offsetof(struct udphdr, source), f->sport, x->sport) ||
	    strait_rewrite_port_at(skb, p->l4_csum, p->udp, f->udp_nocsum, p->l4 + offsetof(struct udphdr, dest), f->dport, x->dport))
		return -1;
	return 0;
}

/* A packet from P too big for our tunnel to Q: ICMPv6 Packet Too Big back to its sender, through the
 * tunnel it came by. Its addresses are the packet's swapped, which P's gateway translates as any reply. */
static __always_inline int strait_packet_too_big_to_peer(struct __sk_buff *skb, const struct strait_config *cfg, const struct strait_pkt6 *p,
							 __u32 peer_id)
{
	const struct strait_peer *peer = bpf_map_lookup_elem(&strait_peers, &peer_id);
	if (!peer)
		return strait_drop(STRAIT_DROP_NO_PEER);
	struct strait_packet_too_big m = {};
	__u32 len = strait_packet_too_big_msg(skb, p, cfg->tunnel_mtu, &m);
	if (!len)
		return strait_drop(STRAIT_DROP_MALFORMED);
	if (bpf_skb_change_tail(skb, ETH_HLEN + len, 0) || bpf_skb_store_bytes(skb, ETH_HLEN, &m, len, 0))
		return strait_drop(STRAIT_DROP_TUNNEL);
	return strait_encap(skb, cfg, peer->endpoint, &peer->endpoint6, peer->vni, peer->dst_mac, peer->src_mac);
}

/* toPeer(Q) for a transit packet: as strait_to_peer6, with the ports. */
static __always_inline int strait_transit6_to_peer(struct __sk_buff *skb, const struct strait_config *cfg, const struct strait_config6 *cfg6,
						   const struct strait_pkt6 *p, const struct strait_flow6 *f, struct strait_xlate6 *x,
						   __u32 peer_id)
{
	const struct strait_peer *peer = bpf_map_lookup_elem(&strait_peers, &peer_id);
	const struct strait_peer6 *peer6 = bpf_map_lookup_elem(&strait_peers6, &peer_id);
	if (!peer || !peer6)
		return strait_drop(STRAIT_DROP_NO_PEER);
	struct strait_in6 saddr = x->saddr;
	int refused = strait_source6_toward(&saddr, cfg6, peer6, &x->saddr);
	if (refused >= 0)
		return strait_drop(refused);
	if (strait_apply6_transit(skb, p, f, x))
		return strait_drop(STRAIT_DROP_CSUM);
	return strait_send_to_peer(skb, cfg, peer, peer_id, &strait_peer_counters6);
}

/* The packet's parse and translation, in a per-CPU array rather than on the stack: room, and what the
 * verifier reads back from a map it does not track, so the paths through the parse (extension headers,
 * protocols, quotes) meet again after it instead of each being walked through the rest (it took the
 * program past a million instructions). Not pinned: each program run's own, used and left. */
struct strait_transit6_scratch {
	struct strait_pkt6 p;
	struct strait_flow6 f;
	struct strait_xlate6 x;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct strait_transit6_scratch);
} strait_scratch6 SEC(".maps");

/* strait_transit6: a packet from peer P that strait_from_peer6 found to be transit. */
static __always_inline int strait_transit6_ingress(struct __sk_buff *skb)
{
	const struct strait_config *cfg = strait_config_get();
	if (!cfg)
		return strait_drop(STRAIT_DROP_NO_CONFIG);
	__u32 zero = 0;
	struct strait_transit6_scratch *s = bpf_map_lookup_elem(&strait_scratch6, &zero);
	if (!s)
		return strait_drop(STRAIT_DROP_TRANSIT6);
	struct strait_pkt6 *p = &s->p;
	struct strait_flow6 *f = &s->f;
	struct strait_xlate6 *x = &s->x;
	int parsed = strait_parse6(skb, p);
	if (parsed == STRAIT_PKT_OTHER)
		return TC_ACT_OK;
	if (parsed != STRAIT_PKT_OK)
		return strait_refuse6(parsed);
	/* The routes changed since the caller looked: as it would have now. */
	const struct strait_route *src = strait_lpm6(&strait_routes6, &p->saddr);
	if (!src)
		return TC_ACT_OK;
	__u32 peer_id = src->peer_id;
	const struct strait_peer6 *peer6 = bpf_map_lookup_elem(&strait_peers6, &peer_id);
	if (!peer6)
		return strait_drop(STRAIT_DROP_NO_PEER);
	const struct strait_config6 *cfg6 = strait_config6_get();
	if (!cfg6)
		return strait_drop(STRAIT_DROP_NO_CONFIG);
	if (strait_flow6_read(skb, p, f))
		return strait_drop(STRAIT_DROP_MALFORMED);
	x->saddr = p->saddr;
	x->src_of = p->saddr;
	x->sport = f->sport;
	x->dport = f->dport;
	x->quote_sport = f->quote_sport;
	bool reply = false;
	int refused = strait_from_peer6_dst(p, peer6, cfg6, &x->daddr, &reply);
	if (refused >= 0)
		return strait_drop(refused);
	if (reply && (p->icmp_error ? strait_snat6_reverse_error(f, x, &cfg6->transit_addr) : strait_snat6_reverse(p, f, x)))
		return strait_drop(STRAIT_DROP_TRANSIT_STATE);

	bool ours = strait_in6(&x->daddr, &cfg6->pod_cidr);
	const struct strait_route *onward = ours ? 0 : strait_lpm6(&strait_routes6, &x->daddr);
	if (!onward) {
		/* A reply whose flow came from here (the routes changed meanwhile): delivered, as IPv4's. */
		if (strait_apply6_transit(skb, p, f, x))
			return strait_drop(STRAIT_DROP_CSUM);
		strait_count_peer(&strait_peer_counters6, peer_id, skb->len, false);
		return strait_deliver(skb, cfg, ours ? strait_lpm6(&strait_nodes6, &x->daddr) : 0);
	}
	/* No IPv6 packet is fragmented on the way: one that our tunnel to Q cannot carry (P's tunnel may be
	 * larger) is answered, before any state is taken for it. */
	if (strait_too_big6(skb, p, cfg->tunnel_mtu))
		return strait_packet_too_big_to_peer(skb, cfg, p, peer_id);
	/* A reflected endpoint answers from its ExternalCIDR address (stateless); anything else needs a
	 * source the other peer can route back to us. */
	const struct strait_in6 *ext = bpf_map_lookup_elem(&strait_natmap6_rev, &x->saddr);
	if (!ext && reply && p->icmp_error) {
		/* An error from a router on the way appears to come from the address the flow went to. */
		ext = bpf_map_lookup_elem(&strait_natmap6_rev, &f->quote_daddr);
		x->src_of = f->quote_daddr;
	}
	if (ext)
		x->saddr = *ext;
	else if (reply || strait_snat6_forward(p, f, x, &cfg6->transit_addr))
		return strait_drop(STRAIT_DROP_TRANSIT_STATE);
	strait_count_peer(&strait_peer_counters6, peer_id, skb->len, false);
	return strait_transit6_to_peer(skb, cfg, cfg6, p, f, x, onward->peer_id);
}
