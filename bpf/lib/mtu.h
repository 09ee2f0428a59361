/* No fragments on the wire (docs/datapath.md, "MTU"): TCP connections through a tunnel get an MSS that
 * fits it (clamped in their SYN and SYN-ACK), and a packet that does not fit and may not be fragmented
 * is answered, like a router would, with ICMP "fragmentation needed" carrying the tunnel MTU. */
#pragma once

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "common.h"
#include "counters.h"
#include "csum.h"
#include "parse.h"

#define STRAIT_TCPOPT_EOL 0
#define STRAIT_TCPOPT_NOP 1
#define STRAIT_TCPOPT_MSS 2
#define STRAIT_TCPOPT_MSS_LEN 4
#define STRAIT_TCP_MAX_OPTIONS 40
/* The options are read into a buffer of this size (a power of two past 40): indexes masked with
 * STRAIT_TCP_OPT_BUF - 1 stay inside it whatever the verifier knows of them. */
#define STRAIT_TCP_OPT_BUF 64
/* IPv4 and TCP headers without options: MSS = MTU - 40. */
#define STRAIT_TCPIP_HLEN 40
#define STRAIT_ICMP_FRAG_NEEDED 4
#define STRAIT_ICMP_TTL 64
/* What an ICMP error quotes: the IP header (options included, at most 60 bytes) and 8 bytes of payload
 * (TCP's sequence number is in them: Linux ignores an error it cannot match to a segment in flight). */
#define STRAIT_QUOTE_MAX (60 + 8)

/* A walk over the TCP options, one option per step of bpf_loop: a loop the verifier checks once, where
 * an unrolled or bounded loop made it explore every path through 40 options. */
struct strait_mss_scan {
	__u8 opts[STRAIT_TCP_OPT_BUF];
	__u32 len;
	__u32 off;
	int at; /* where the MSS value is among the options; -1: none, or malformed options */
};

/* A bpf_loop callback, so a function of its own (not inlined). 0: next option; 1: done. */
static long strait_mss_step(__u32 i, void *ctx)
{
	struct strait_mss_scan *s = ctx;
	__u32 off = s->off;
	if (off >= s->len)
		return 1;
	__u8 kind = s->opts[off & (STRAIT_TCP_OPT_BUF - 1)];
	if (kind == STRAIT_TCPOPT_EOL)
		return 1;
	if (kind == STRAIT_TCPOPT_NOP) {
		s->off = off + 1;
		return 0;
	}
	if (off + 1 >= s->len)
		return 1;
	__u8 olen = s->opts[(off + 1) & (STRAIT_TCP_OPT_BUF - 1)];
	if (olen < 2 || off + olen > s->len)
		return 1;
	if (kind == STRAIT_TCPOPT_MSS) {
		if (olen == STRAIT_TCPOPT_MSS_LEN)
			s->at = off + 2;
		return 1;
	}
	s->off = off + olen;
	return 0;
}

/* A TCP header as either IP family's parse found it. */
struct strait_tcp_seg {
	__u32 l4;      /* offset of the TCP header */
	__u32 l4_csum; /* offset of its checksum */
	__u32 end;     /* where the IP packet ends */
	__u8 flags;
	__u8 hlen; /* with its options */
};

/* A SYN or SYN-ACK whose MSS option exceeds `mss` gets `mss` instead; the checksum helper keeps the TCP
 * checksum right (CHECKSUM_PARTIAL too). -1: a helper failed. */
static __always_inline int strait_clamp_mss_to(struct __sk_buff *skb, const struct strait_tcp_seg *seg, __u16 mss)
{
	if ((seg->flags & (STRAIT_TCP_SYN | STRAIT_TCP_RST)) != STRAIT_TCP_SYN)
		return 0;
	__u32 len = seg->hlen;
	if (len <= sizeof(struct tcphdr))
		return 0;
	len -= sizeof(struct tcphdr);
	if (len > STRAIT_TCP_MAX_OPTIONS)
		return 0;
	__u32 opts_off = seg->l4 + sizeof(struct tcphdr);
	if (opts_off + len > seg->end)
		return 0;
	/* The same value (1 to 40), in bounds every verifier sees where the helper takes it (1 to 64, the
	 * buffer's size): clang may check one copy of `len` and pass another, whose bounds the verifier
	 * does not know (6.1: "R4 min value is negative"); the barrier keeps clang from dropping the mask. */
	barrier_var(len);
	len = ((len - 1) & (STRAIT_TCP_OPT_BUF - 1)) + 1;
	struct strait_mss_scan scan = { .len = len, .at = -1 };
	if (bpf_skb_load_bytes(skb, opts_off, scan.opts, len))
		return 0;
	/* Every option takes at least a byte: 40 steps cover the longest list. */
	bpf_loop(STRAIT_TCP_MAX_OPTIONS, strait_mss_step, &scan, 0);
	int at = scan.at;
	if (at < 0)
		return 0;
	__u32 value_off = opts_off + at;
	__be16 old;
	if (bpf_skb_load_bytes(skb, value_off, &old, sizeof(old)))
		return 0;
	if (bpf_ntohs(old) <= mss)
		return 0;
	__be16 new = bpf_htons(mss);
	/* The checksum sums 16-bit words from the TCP header's start: at an odd offset the field straddles two
	 * of them, and its bytes count swapped. */
	__u16 from = old, to = new;
	if (at & 1) {
		from = (__u16)((from >> 8) | (from << 8));
		to = (__u16)((to >> 8) | (to << 8));
	}
	if (bpf_skb_store_bytes(skb, value_off, &new, sizeof(new), 0) || bpf_l4_csum_replace(skb, seg->l4_csum, from, to, sizeof(to)))
		return -1;
	return 0;
}

/* A TCP SYN or SYN-ACK over IPv4 gets an MSS that fits a tunnel of `mtu`. */
static __always_inline int strait_clamp_mss(struct __sk_buff *skb, const struct strait_pkt *p, __u16 mtu)
{
	if (!mtu || p->proto != IPPROTO_TCP || p->later_frag || !p->l4_csum)
		return 0;
	struct strait_tcp_seg seg = { .l4 = p->l4, .l4_csum = p->l4_csum, .end = ETH_HLEN + p->ip_len, .flags = p->tcp_flags, .hlen = p->l4_hlen };
	return strait_clamp_mss_to(skb, &seg, mtu - STRAIT_TCPIP_HLEN);
}

/* Whether this node's tunnels may fragment their outer packet: over IPv4 they do; over IPv6 (the node's
 * underlay address IPv6, and so every tunnel end of its spec) the kernel sends no outer packet larger than
 * the path (ip6_fragment fragments only what a local socket allows), so nothing too large crosses. */
static __always_inline bool strait_outer_fragments(const struct strait_config *cfg)
{
	return cfg->node_addr != 0;
}

/* Whether the packet, once in a tunnel of `mtu`, would have to be fragmented although its sender said
 * not to, or although the tunnel cannot (`!outer_fragments`). A GSO packet is cut into segments first:
 * those must fit (as skb_gso_validate_network_len). */
static __always_inline bool strait_too_big(const struct __sk_buff *skb, const struct strait_pkt *p, __u16 mtu, bool outer_fragments)
{
	/* No ICMP error answers an ICMP error (RFC 1122, 3.2.2). */
	if (!mtu || (!p->df && outer_fragments) || p->icmp_error)
		return false;
	__u32 len = p->ip_len;
	if (skb->gso_size && p->l4_hlen && !p->later_frag)
		len = (p->l4 - ETH_HLEN) + p->l4_hlen + skb->gso_size;
	return len > mtu;
}

/* Makes the packet `len` bytes of `msg` (an IP packet) behind its Ethernet header `eth` with the
 * addresses swapped, and sends it back out of the interface it came in by: an error like a router's. */
static __always_inline int strait_send_back(struct __sk_buff *skb, const struct ethhdr *eth, const void *msg, __u32 len)
{
	__u8 macs[2 * ETH_ALEN];
	__builtin_memcpy(macs, eth->h_source, ETH_ALEN);
	__builtin_memcpy(macs + ETH_ALEN, eth->h_dest, ETH_ALEN);
	if (bpf_skb_change_tail(skb, ETH_HLEN + len, 0) || bpf_skb_store_bytes(skb, 0, macs, sizeof(macs), 0) ||
	    bpf_skb_store_bytes(skb, ETH_HLEN, msg, len, 0))
		return strait_drop(STRAIT_DROP_TUNNEL);
	return bpf_redirect(skb->ifindex, 0);
}

/* The ICMP error: the IP and ICMP headers in front of the quote. */
struct strait_frag_needed {
	struct iphdr ip;
	struct strait_icmphdr icmp; /* id: unused (0); sequence: the next-hop MTU (RFC 1191) */
	__u8 quote[STRAIT_QUOTE_MAX];
};

/* Turns the packet into ICMP "fragmentation needed" (type 3, code 4, next-hop MTU `mtu`) from this node
 * to its sender, and sends it back out of the interface it came in by. */
static __always_inline int strait_frag_needed(struct __sk_buff *skb, const struct strait_config *cfg, const struct strait_pkt *p, __u16 mtu)
{
	struct ethhdr eth;
	struct strait_frag_needed m = {};
	__u32 hl = p->l4 - ETH_HLEN;
	__u32 quote = hl + 8;
	if (quote > STRAIT_QUOTE_MAX || quote > p->ip_len || strait_load(skb, 0, &eth, sizeof(eth)) ||
	    bpf_skb_load_bytes(skb, ETH_HLEN, m.quote, quote))
		return strait_drop(STRAIT_DROP_MALFORMED);
	__u32 icmp_len = sizeof(m.icmp) + quote;
	m.ip.version = 4;
	m.ip.ihl = sizeof(m.ip) / 4;
	m.ip.tot_len = bpf_htons(sizeof(m.ip) + icmp_len);
	m.ip.ttl = STRAIT_ICMP_TTL;
	m.ip.protocol = IPPROTO_ICMP;
	/* From the node; one without an IPv4 underlay address (an IPv6 underlay) uses the cluster's transit
	 * address, as 0.0.0.0 is a martian source the pod would drop. */
	m.ip.saddr = cfg->node_addr ? cfg->node_addr : cfg->transit_addr;
	m.ip.daddr = p->saddr;
	m.ip.check = ~strait_csum_fold(bpf_csum_diff(0, 0, (__be32 *)&m.ip, sizeof(m.ip), 0));
	m.icmp.type = STRAIT_ICMP_DEST_UNREACH;
	m.icmp.code = STRAIT_ICMP_FRAG_NEEDED;
	m.icmp.sequence = bpf_htons(mtu);
	/* An IP header is a multiple of 4 bytes, so is the ICMP message: bpf_csum_diff takes it whole. */
	m.icmp.checksum = ~strait_csum_fold(bpf_csum_diff(0, 0, (__be32 *)&m.icmp, icmp_len, 0));

	return strait_send_back(skb, &eth, &m, sizeof(m.ip) + icmp_len);
}
