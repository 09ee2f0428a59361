/* IPv6 stateless prefix translation (host bits kept, network bits swapped, any length /0../128) and the
 * rewrite of a parsed packet's addresses. Word by word with the IPv4 helpers: a 128-bit prefix is four
 * 32-bit ones, each word's prefix length what of it the prefix covers. */
#pragma once

#include "common.h"
#include "icmp6.h"
#include "nat.h"
#include "parse6.h"

/* The part of a 128-bit prefix that falls in 32-bit word `word` of it, as an IPv4 network. */
static __always_inline struct strait_cidr strait_cidr6_word(const struct strait_cidr6 *c, __u32 word)
{
	__u32 len = c->prefix_len > 32 * word ? c->prefix_len - 32 * word : 0;
	return (struct strait_cidr){ .addr = c->addr.addr[word], .prefix_len = len > 32 ? 32 : len };
}

/* Whether `c` is a network, not the STRAIT_PREFIX_LEN_NONE of a family the home or the peering lacks. */
static __always_inline bool strait_has6(const struct strait_cidr6 *c)
{
	return c->prefix_len <= 128;
}

/* Never true for STRAIT_PREFIX_LEN_NONE. */
static __always_inline bool strait_in6(const struct strait_in6 *a, const struct strait_cidr6 *c)
{
	if (c->prefix_len > 128)
		return false;
	bool in = true;
#pragma unroll
	for (__u32 i = 0; i < 4; i++) {
		struct strait_cidr w = strait_cidr6_word(c, i);
		in = in && strait_in(a->addr[i], &w);
	}
	return in;
}

/* The same host as `a` in network `to`. */
static __always_inline struct strait_in6 strait_translate6(const struct strait_in6 *a, const struct strait_cidr6 *to)
{
	struct strait_in6 r;
#pragma unroll
	for (__u32 i = 0; i < 4; i++) {
		struct strait_cidr w = strait_cidr6_word(to, i);
		r.addr[i] = strait_translate(a->addr[i], &w);
	}
	return r;
}

/* Gives the packet addresses `saddr` and `daddr`; -1 when a helper failed (drop it). The TCP, UDP and
 * ICMPv6 checksums all cover both through the pseudo-header (RFC 8200, 8.1): one update with the
 * difference of the 32 bytes. IPv6 has no header checksum to cancel the address change out of a
 * CHECKSUM_COMPLETE skb's sum as IPv4's does, so the store itself updates skb->csum. A zero UDP checksum
 * (invalid in IPv6 but for tunnels that allow it, RFC 6935) stays zero: the receiver decides. */
/* The quote of an ICMPv6 error gets the mirror (icmp6.h: `src_of`, and the quoted source port at `ports`
 * from `sport_from` to `sport_to`, for hub transit). */
static __always_inline int strait_apply6_to(struct __sk_buff *skb, const struct strait_pkt6 *p, const struct strait_in6 *saddr,
					    const struct strait_in6 *daddr, const struct strait_in6 *src_of, __u32 ports, __be16 sport_from,
					    __be16 sport_to)
{
	if (strait_in6_same(saddr, &p->saddr) && strait_in6_same(daddr, &p->daddr))
		return 0;
	struct strait_in6 from[2] = { p->saddr, p->daddr };
	struct strait_in6 to[2] = { *saddr, *daddr };
	__s64 diff = bpf_csum_diff((__be32 *)from, sizeof(from), (__be32 *)to, sizeof(to), 0);
	if (diff < 0 || bpf_skb_store_bytes(skb, STRAIT_IP6_ADDRS_OFF, to, sizeof(to), BPF_F_RECOMPUTE_CSUM))
		return -1;
	if (p->l4_csum && bpf_l4_csum_replace(skb, p->l4_csum, 0, diff, BPF_F_PSEUDO_HDR | (p->udp ? BPF_F_MARK_MANGLED_0 : 0)))
		return -1;
	return p->quote ? strait_icmp6_mirror_to(skb, p, saddr, daddr, src_of, ports, sport_from, sport_to) : 0;
}

static __always_inline int strait_apply6(struct __sk_buff *skb, const struct strait_pkt6 *p, const struct strait_in6 *saddr,
					 const struct strait_in6 *daddr)
{
	return strait_apply6_to(skb, p, saddr, daddr, &p->saddr, 0, 0, 0);
}
