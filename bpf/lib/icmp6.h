/* icmp.h for IPv6: an ICMPv6 error's quote travelled the other way and gets the mirror of the outer
 * translation (a quoted source equal to the outer destination becomes the new destination, a quoted
 * destination equal to the outer source the new source), its L4 checksum and the ICMPv6 checksum with
 * it; hub transit also gives the quoted source port back. */
#pragma once

#include "csum.h"
#include "in6.h"
#include "parse6.h"

/* `src_of`: the address `saddr` stands for (normally the packet's own source; hub transit: what an error
 * from a router on the way stands for). `ports`: the offset of the quoted source port, changed from
 * `sport_from` to `sport_to` (hub transit: the original port back); 0: the ports stay. */
static __always_inline int strait_icmp6_mirror_to(struct __sk_buff *skb, const struct strait_pkt6 *p, const struct strait_in6 *saddr,
						  const struct strait_in6 *daddr, const struct strait_in6 *src_of, __u32 ports,
						  __be16 sport_from, __be16 sport_to)
{
	__u32 addrs = p->quote + offsetof(struct strait_ip6hdr, saddr);
	struct strait_in6 from[2];
	if (strait_load(skb, addrs, from, sizeof(from)))
		return -1;
	bool src = strait_in6_same(&from[0], &p->daddr), dst = strait_in6_same(&from[1], src_of);
	if (!src && !dst)
		return 0;
	bool port = ports && sport_from != sport_to;
	/* The new addresses in place of the old (no copy of them: the stack is short). */
	const struct strait_in6 *to_src = src ? daddr : &from[0], *to_dst = dst ? saddr : &from[1];
	__s64 diff = bpf_csum_diff((__be32 *)&from[0], sizeof(from[0]), (__be32 *)to_src, sizeof(*to_src), 0);
	if (diff >= 0)
		diff = bpf_csum_diff((__be32 *)&from[1], sizeof(from[1]), (__be32 *)to_dst, sizeof(*to_dst), diff);
	__u16 icmp, l4_old = 0, l4_new = 0;
	if (diff < 0 || strait_load(skb, p->l4_csum, &icmp, sizeof(icmp)))
		return -1;
	if (p->quote_l4_csum) {
		if (strait_load(skb, p->quote_l4_csum, &l4_old, sizeof(l4_old)))
			return -1;
		/* The quoted checksum covers the quoted addresses (pseudo-header); a zero UDP one stays zero. */
		l4_new = p->quote_udp && !l4_old ? 0 : strait_csum_add_diff(l4_old, diff);
		if (port && !(p->quote_udp && !l4_old))
			l4_new = strait_csum_replace2(l4_new, sport_from, sport_to);
		if (p->quote_udp && l4_old && !l4_new)
			l4_new = 0xffff;
	}
	/* The ICMPv6 checksum covers the quote: its addresses, its port and its checksum changed. */
	icmp = strait_csum_replace2(strait_csum_add_diff(icmp, diff), l4_old, l4_new);
	if (port)
		icmp = strait_csum_replace2(icmp, sport_from, sport_to);
	if (bpf_skb_store_bytes(skb, addrs, to_src, sizeof(*to_src), 0) ||
	    bpf_skb_store_bytes(skb, addrs + sizeof(*to_src), to_dst, sizeof(*to_dst), 0) ||
	    (p->quote_l4_csum && bpf_skb_store_bytes(skb, p->quote_l4_csum, &l4_new, sizeof(l4_new), 0)) ||
	    (port && bpf_skb_store_bytes(skb, ports, &sport_to, sizeof(sport_to), 0)) ||
	    bpf_skb_store_bytes(skb, p->l4_csum, &icmp, sizeof(icmp), 0))
		return -1;
	return 0;
}
