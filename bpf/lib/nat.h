/* Stateless prefix translation (host bits kept, network bits swapped, any length /0../32) and the
 * rewrite of a parsed packet to new addresses and ports with every checksum it carries kept right.
 * Stores use flags 0 and the csum helpers do the compensation, so CHECKSUM_COMPLETE and
 * CHECKSUM_PARTIAL skbs stay consistent too (the helpers know both). */
#pragma once

#include "common.h"
#include "icmp.h"
#include "parse.h"
#include "xlate.h"

/* Network-bit mask in host order; a shift by 32 is undefined, so /0 is spelled out. */
static __always_inline __u32 strait_mask(__u32 prefix_len)
{
	return prefix_len == 0 ? 0 : ~0u << (32 - (prefix_len > 32 ? 32 : prefix_len));
}

/* Whether `c` is a network, not the STRAIT_PREFIX_LEN_NONE of a family the home or the peering lacks:
 * what is translated into `c` must be, or its host bits would land in 0.0.0.0/32. */
static __always_inline bool strait_has(const struct strait_cidr *c)
{
	return c->prefix_len <= 32;
}

/* Never true for STRAIT_PREFIX_LEN_NONE. */
static __always_inline bool strait_in(__be32 addr, const struct strait_cidr *c)
{
	return c->prefix_len <= 32 && ((bpf_ntohl(addr) ^ bpf_ntohl(c->addr)) & strait_mask(c->prefix_len)) == 0;
}

/* The same host as `addr` in network `to`. */
static __always_inline __be32 strait_translate(__be32 addr, const struct strait_cidr *to)
{
	__u32 m = strait_mask(to->prefix_len);
	return bpf_htonl((bpf_ntohl(to->addr) & m) | (bpf_ntohl(addr) & ~m));
}

static __always_inline __u64 strait_l4_flags(const struct strait_pkt *p)
{
	return p->udp ? BPF_F_MARK_MANGLED_0 : 0;
}

static __always_inline int strait_rewrite_addr(struct __sk_buff *skb, const struct strait_pkt *p, __u32 off, __be32 from, __be32 to)
{
	if (from == to)
		return 0;
	if (bpf_skb_store_bytes(skb, off, &to, sizeof(to), 0) ||
	    bpf_l3_csum_replace(skb, STRAIT_IP_CSUM_OFF, from, to, sizeof(to)))
		return -1;
	if (p->pseudo && bpf_l4_csum_replace(skb, p->l4_csum, from, to, BPF_F_PSEUDO_HDR | strait_l4_flags(p) | sizeof(to)))
		return -1;
	return 0;
}

/* A port (or an ICMP echo identifier) at `off` changed, whichever the IP family: `l4_csum` is the L4
 * checksum's offset, `udp` and `udp_nocsum` say whether it is UDP's and zero. */
static __always_inline int strait_rewrite_port_at(struct __sk_buff *skb, __u32 l4_csum, bool udp, bool udp_nocsum, __u32 off, __be16 from,
						  __be16 to)
{
	if (from == to)
		return 0;
	/* A CHECKSUM_COMPLETE skb's sum stays right when the L4 checksum moves with the port; a zero UDP
	 * checksum does not move, so the store itself must update skb->csum. */
	if (bpf_skb_store_bytes(skb, off, &to, sizeof(to), udp_nocsum ? BPF_F_RECOMPUTE_CSUM : 0) ||
	    bpf_l4_csum_replace(skb, l4_csum, from, to, (udp ? BPF_F_MARK_MANGLED_0 : 0) | sizeof(to)))
		return -1;
	return 0;
}

static __always_inline int strait_rewrite_port(struct __sk_buff *skb, const struct strait_pkt *p, __u32 off, __be16 from, __be16 to)
{
	return strait_rewrite_port_at(skb, p->l4_csum, p->udp, p->udp_nocsum, off, from, to);
}

/* Both addresses (adjacent in the header): one store and one checksum update per header, with the
 * difference of the 8 bytes (the helpers' "diff" form: size 0, from 0), instead of two of each. */
static __always_inline int strait_rewrite_addrs(struct __sk_buff *skb, const struct strait_pkt *p, __be32 saddr, __be32 daddr)
{
	__be32 to[2] = { saddr, daddr };
	__wsum diff = strait_csum_diff8(p->saddr, p->daddr, saddr, daddr);
	if (bpf_skb_store_bytes(skb, STRAIT_IP_SADDR_OFF, to, sizeof(to), 0) ||
	    bpf_l3_csum_replace(skb, STRAIT_IP_CSUM_OFF, 0, diff, 0))
		return -1;
	if (p->pseudo && bpf_l4_csum_replace(skb, p->l4_csum, 0, diff, BPF_F_PSEUDO_HDR | strait_l4_flags(p)))
		return -1;
	return 0;
}

/* Applies `x` to the packet; -1 when a helper failed (the packet may then be half-written: drop it). */
static __always_inline int strait_apply(struct __sk_buff *skb, const struct strait_pkt *p, const struct strait_xlate *x)
{
	if (x->saddr != p->saddr && x->daddr != p->daddr) {
		if (strait_rewrite_addrs(skb, p, x->saddr, x->daddr))
			return -1;
	} else if (strait_rewrite_addr(skb, p, STRAIT_IP_SADDR_OFF, p->saddr, x->saddr) ||
		   strait_rewrite_addr(skb, p, STRAIT_IP_DADDR_OFF, p->daddr, x->daddr)) {
		return -1;
	}
	if (p->icmp_echo) {
		/* One identifier field: whichever side the translation changed. */
		__be16 id = x->sport != p->sport ? x->sport : x->dport;
		if (strait_rewrite_port(skb, p, p->l4 + offsetof(struct strait_icmphdr, id), p->sport, id))
			return -1;
	} else if (p->pseudo) {
		if (strait_rewrite_port(skb, p, p->l4 + offsetof(struct udphdr, source), p->sport, x->sport) ||
		    strait_rewrite_port(skb, p, p->l4 + offsetof(struct udphdr, dest), p->dport, x->dport))
			return -1;
	}
	if (p->icmp_error)
		return strait_icmp_mirror(skb, p, x);
	return 0;
}
