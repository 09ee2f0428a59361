/* Reads the IPv6 headers the datapath decides on and rewrites (RFC 8200), walking the extension
 * headers a bounded number of times. Parsing never writes. */
#pragma once

#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#include "common.h"
#include "parse.h"

/* Spelled out from RFC 8200 (as <linux/icmp.h> in parse.h: <linux/ipv6.h> pulls in more than it needs). */
struct strait_ip6hdr {
	__u8 ver_tc;
	__u8 tc_flow[3];
	__be16 payload_len;
	__u8 nexthdr;
	__u8 hop_limit;
	struct strait_in6 saddr;
	struct strait_in6 daddr; /* adjacent to saddr: both are rewritten in one store */
};
#define STRAIT_IP6_ADDRS_OFF (ETH_HLEN + offsetof(struct strait_ip6hdr, saddr))

#define STRAIT_NEXTHDR_HOP 0
#define STRAIT_NEXTHDR_ROUTING 43
#define STRAIT_NEXTHDR_FRAGMENT 44
#define STRAIT_NEXTHDR_DEST 60
#define STRAIT_IPPROTO_ICMPV6 58
/* Hop-by-hop, destination options before and after a routing header, and a fragment header: what a
 * real packet carries; more is refused (STRAIT_DROP_EXTHDRS) rather than looped over. */
#define STRAIT_IP6_MAX_EXTHDRS 4
#define STRAIT_IP6_FRAG_OFFSET_MASK 0xfff8

#define STRAIT_ICMP6_INFO_FIRST 128
/* Neighbour discovery (RFC 4861): router/neighbour solicitation and advertisement, redirect. */
#define STRAIT_ICMP6_ND_FIRST 133
#define STRAIT_ICMP6_ND_LAST 137

struct strait_pkt6 {
	struct strait_in6 saddr;
	struct strait_in6 daddr;
	__u32 l4;        /* offset of the L4 header (after the extension headers) */
	__u32 l4_csum;   /* offset of the L4 checksum; 0: none (later fragment, a protocol without one) */
	__u32 ip_len;    /* the IPv6 header, extension headers and payload */
	__u8 proto;      /* the last next-header value: the L4 protocol */
	__u8 tcp_flags;  /* TCP: the flags byte */
	__u8 l4_hlen;    /* TCP: the header with its options; UDP: 8 */
	bool later_frag; /* fragment offset > 0: no L4 header */
	bool udp;        /* a zero checksum stays zero (nat6.h) */
	bool icmp_error; /* ICMPv6 types below 128 (RFC 4443, 2.1) */
	bool quote_udp;
	__u32 quote;         /* ICMPv6 error: offset of the quoted IPv6 header; 0: not whole */
	__u32 quote_l4_csum; /* its TCP, UDP or ICMPv6 checksum, right after the header; 0: not carried */
};

/* The packet an ICMPv6 error quotes, if its IPv6 header is whole; the L4 checksum found when no
 * extension header comes first. */
static __always_inline int strait_parse6_quote(struct __sk_buff *skb, struct strait_pkt6 *p, __u32 end)
{
	__u32 q = p->l4 + sizeof(struct strait_icmphdr);
	__u32 l4 = q + sizeof(struct strait_ip6hdr);
	__u8 head[8];
	if (l4 > end)
		return STRAIT_PKT_OK;
	if (strait_load(skb, q, head, sizeof(head)))
		return STRAIT_PKT_MALFORMED;
	p->quote = q;
	__u8 next = head[offsetof(struct strait_ip6hdr, nexthdr)];
	if (next == IPPROTO_TCP && l4 + offsetof(struct tcphdr, check) + 2 <= end)
		p->quote_l4_csum = l4 + offsetof(struct tcphdr, check);
	if (next == IPPROTO_UDP && l4 + sizeof(struct udphdr) <= end) {
		p->quote_l4_csum = l4 + offsetof(struct udphdr, check);
		p->quote_udp = true;
	}
	if (next == STRAIT_IPPROTO_ICMPV6 && l4 + sizeof(struct strait_icmphdr) <= end)
		p->quote_l4_csum = l4 + offsetof(struct strait_icmphdr, checksum);
	return STRAIT_PKT_OK;
}

/* Link-local (fe80::/10) and multicast (ff00::/8): a link's own business, never translated or tunnelled,
 * whatever the routes say. */
static __always_inline bool strait_in6_link_scope(const struct strait_in6 *a)
{
	__u32 w = bpf_ntohl(a->addr[0]);
	return (w >> 24) == 0xff || (w >> 22) == (0xfe80u >> 6);
}

static __always_inline bool strait_ip6_is_exthdr(__u8 next)
{
	return next == STRAIT_NEXTHDR_HOP || next == STRAIT_NEXTHDR_ROUTING || next == STRAIT_NEXTHDR_FRAGMENT ||
	       next == STRAIT_NEXTHDR_DEST;
}

static __always_inline int strait_parse6_l4(struct __sk_buff *skb, struct strait_pkt6 *p, __u32 end)
{
	switch (p->proto) {
	case IPPROTO_TCP: {
		struct tcphdr tcp;
		if (p->l4 + sizeof(tcp) > end || strait_load(skb, p->l4, &tcp, sizeof(tcp)))
			return STRAIT_PKT_MALFORMED;
		p->l4_csum = p->l4 + offsetof(struct tcphdr, check);
		p->tcp_flags = ((__u8 *)&tcp)[13];
		p->l4_hlen = tcp.doff * 4;
		return STRAIT_PKT_OK;
	}
	case IPPROTO_UDP:
		if (p->l4 + sizeof(struct udphdr) > end)
			return STRAIT_PKT_MALFORMED;
		p->l4_csum = p->l4 + offsetof(struct udphdr, check);
		p->l4_hlen = sizeof(struct udphdr);
		p->udp = true;
		return STRAIT_PKT_OK;
	case STRAIT_IPPROTO_ICMPV6: {
		struct strait_icmphdr icmp; /* type, code and checksum as ICMPv4's (RFC 4443) */
		if (p->l4 + sizeof(icmp) > end || strait_load(skb, p->l4, &icmp, sizeof(icmp)))
			return STRAIT_PKT_MALFORMED;
		if (icmp.type >= STRAIT_ICMP6_ND_FIRST && icmp.type <= STRAIT_ICMP6_ND_LAST)
			return STRAIT_PKT_OTHER;
		p->l4_csum = p->l4 + offsetof(struct strait_icmphdr, checksum);
		p->icmp_error = icmp.type < STRAIT_ICMP6_INFO_FIRST;
		return p->icmp_error ? strait_parse6_quote(skb, p, end) : STRAIT_PKT_OK;
	}
	default:
		return STRAIT_PKT_OK;
	}
}

/* Parses Ethernet + IPv6 + extension headers + what follows; the caller checked the ethertype. */
static __always_inline int strait_parse6(struct __sk_buff *skb, struct strait_pkt6 *p)
{
	__builtin_memset(p, 0, sizeof(*p));
	struct strait_ip6hdr ip;
	if (strait_load(skb, ETH_HLEN, &ip, sizeof(ip)))
		return STRAIT_PKT_OTHER;
	p->saddr = ip.saddr;
	p->daddr = ip.daddr;
	if (strait_in6_link_scope(&ip.saddr) || strait_in6_link_scope(&ip.daddr))
		return STRAIT_PKT_OTHER;
	/* A jumbogram (payload length 0, RFC 2675) ends before its L4 header: malformed here. */
	__u32 end = ETH_HLEN + sizeof(ip) + bpf_ntohs(ip.payload_len);
	if ((ip.ver_tc >> 4) != 6 || end > skb->len)
		return STRAIT_PKT_MALFORMED;
	p->ip_len = end - ETH_HLEN;
	__u32 off = ETH_HLEN + sizeof(ip);
	__u8 next = ip.nexthdr;
#pragma unroll
	for (int i = 0; i < STRAIT_IP6_MAX_EXTHDRS; i++) {
		if (!strait_ip6_is_exthdr(next))
			break;
		/* Next header, length, and (fragment) offset or (routing) type and segments left. */
		__u8 h[4];
		if (off + 8 > end || strait_load(skb, off, h, sizeof(h)))
			return STRAIT_PKT_MALFORMED;
		/* With segments left, the destination is not the final one: the L4 checksum covers an address
		 * the packet does not show (RFC 8200, 8.1). */
		if (next == STRAIT_NEXTHDR_ROUTING && h[3])
			return STRAIT_PKT_EXTHDRS;
		__u32 len = next == STRAIT_NEXTHDR_FRAGMENT ? 8 : (h[1] + 1) * 8;
		bool later = next == STRAIT_NEXTHDR_FRAGMENT && (((h[2] << 8) | h[3]) & STRAIT_IP6_FRAG_OFFSET_MASK);
		next = h[0];
		off += len;
		if (later) {
			p->proto = next;
			p->l4 = off;
			p->later_frag = true;
			return STRAIT_PKT_OK;
		}
	}
	if (strait_ip6_is_exthdr(next))
		return STRAIT_PKT_EXTHDRS;
	p->proto = next;
	p->l4 = off;
	return strait_parse6_l4(skb, p, end);
}
