/* mtu.h for IPv6: an IPv6 packet is never fragmented on the way (RFC 8200, 5), so one over the tunnel
 * MTU is answered with ICMPv6 Packet Too Big, and TCP SYNs get an MSS that fits (IPv6 and TCP headers:
 * 60 bytes). */
#pragma once

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "common.h"
#include "counters.h"
#include "csum.h"
#include "mtu.h"
#include "parse6.h"

#define STRAIT_TCPIP6_HLEN 60
#define STRAIT_ICMP6_PACKET_TOO_BIG 2
/* The IPv6 header, then up to 16 bytes: a fragment header (the first fragment of a datagram larger than
 * the pod's MTU) and 8 bytes of the TCP or UDP header (the ports, TCP's sequence number), what the sender
 * matches the error to: without them its stack drops the error and never learns the path MTU. Other
 * extension headers would push them out: such a packet is quoted as far as this goes (the stack has no
 * room for more; pods rarely send them). */
#define STRAIT_QUOTE6_EXTRA 16
/* Whole 32-bit words (bpf_csum_diff sums those), bounded for the verifier. */
#define STRAIT_QUOTE6_EXTRA_MASK 0x1c
#define STRAIT_QUOTE6_MAX (40 + STRAIT_QUOTE6_EXTRA)

static __always_inline int strait_clamp_mss6(struct __sk_buff *skb, const struct strait_pkt6 *p, __u16 mtu)
{
	if (!mtu || p->proto != IPPROTO_TCP || p->later_frag || !p->l4_csum)
		return 0;
	struct strait_tcp_seg seg = { .l4 = p->l4, .l4_csum = p->l4_csum, .end = ETH_HLEN + p->ip_len, .flags = p->tcp_flags, .hlen = p->l4_hlen };
	return strait_clamp_mss_to(skb, &seg, mtu - STRAIT_TCPIP6_HLEN);
}

/* Whether the packet does not fit a tunnel of `mtu` (a GSO packet: its segments). */
static __always_inline bool strait_too_big6(const struct __sk_buff *skb, const struct strait_pkt6 *p, __u16 mtu)
{
	/* No ICMPv6 error answers an ICMPv6 error (RFC 4443, 2.4 e). */
	if (!mtu || p->icmp_error)
		return false;
	__u32 len = p->ip_len;
	if (skb->gso_size && p->l4_hlen && !p->later_frag)
		len = (p->l4 - ETH_HLEN) + p->l4_hlen + skb->gso_size;
	return len > mtu;
}

struct strait_packet_too_big {
	struct strait_ip6hdr ip;
	__u8 type;
	__u8 code;
	__sum16 checksum;
	__be32 mtu;
	__u8 quote[STRAIT_QUOTE6_MAX];
};

/* The ICMPv6 checksum's pseudo-header (RFC 8200, 8.1) after the addresses: length and next header. */
struct strait_pseudo6_tail {
	__be32 len;
	__u8 zero[3];
	__u8 nexthdr;
};

/* Writes ICMPv6 Packet Too Big (MTU `mtu`) about the packet into `m`: its length, 0 when the packet
 * cannot be read. It comes from the destination the packet could not reach, which is what the sender's
 * stack needs to match it (the quote names the flow); this node may have no IPv6 address anyway. */
static __always_inline __u32 strait_packet_too_big_msg(struct __sk_buff *skb, const struct strait_pkt6 *p, __u16 mtu,
							struct strait_packet_too_big *m)
{
	/* What follows the IPv6 header, as far as it fits, in whole 32-bit words (bpf_csum_diff sums those):
	 * masked rather than compared, so the verifier sees the length's bounds. */
	__u32 extra = p->l4 - ETH_HLEN - sizeof(struct strait_ip6hdr) + 8;
	if (extra > p->ip_len - sizeof(struct strait_ip6hdr))
		extra = p->ip_len - sizeof(struct strait_ip6hdr);
	if (extra > STRAIT_QUOTE6_EXTRA)
		extra = STRAIT_QUOTE6_EXTRA;
	__u32 quote = sizeof(struct strait_ip6hdr) + (extra & STRAIT_QUOTE6_EXTRA_MASK);
	if (bpf_skb_load_bytes(skb, ETH_HLEN, m->quote, quote))
		return 0;
	__u32 icmp_len = 8 + quote;
	m->ip.ver_tc = 0x60;
	m->ip.payload_len = bpf_htons(icmp_len);
	m->ip.nexthdr = STRAIT_IPPROTO_ICMPV6;
	m->ip.hop_limit = STRAIT_ICMP_TTL;
	m->ip.saddr = p->daddr;
	m->ip.daddr = p->saddr;
	m->type = STRAIT_ICMP6_PACKET_TOO_BIG;
	m->mtu = bpf_htonl(mtu);
	struct strait_pseudo6_tail tail = { .len = bpf_htonl(icmp_len), .nexthdr = STRAIT_IPPROTO_ICMPV6 };
	__s64 sum = bpf_csum_diff(0, 0, (__be32 *)&m->ip.saddr, 2 * sizeof(struct strait_in6), 0);
	sum = bpf_csum_diff(0, 0, (__be32 *)&tail, sizeof(tail), sum);
	sum = bpf_csum_diff(0, 0, (__be32 *)&m->type, icmp_len, sum);
	m->checksum = ~strait_csum_fold(sum);
	return sizeof(m->ip) + icmp_len;
}

/* Turns the packet into ICMPv6 Packet Too Big (MTU `mtu`) to its sender and sends it back. */
static __always_inline int strait_packet_too_big(struct __sk_buff *skb, const struct strait_pkt6 *p, __u16 mtu)
{
	struct ethhdr eth;
	struct strait_packet_too_big m = {};
	if (strait_load(skb, 0, &eth, sizeof(eth)))
		return strait_drop(STRAIT_DROP_MALFORMED);
	__u32 len = strait_packet_too_big_msg(skb, p, mtu, &m);
	if (!len)
		return strait_drop(STRAIT_DROP_MALFORMED);
	return strait_send_back(skb, &eth, &m, len);
}
