/* ICMP errors quote the datagram that caused them; the quote travelled the other way, so it gets the
 * mirror of the outer translation (struct strait_xlate says how): a quoted source equal to the outer
 * destination is rewritten like the outer destination, a quoted destination equal to what the outer
 * source stands for like the outer source. Hub transit also restores the quoted source port. */
#pragma once

#include "csum.h"
#include "parse.h"
#include "xlate.h"

static __always_inline int strait_icmp_mirror(struct __sk_buff *skb, const struct strait_pkt *p, const struct strait_xlate *x)
{
	const struct strait_quote *q = &p->quote;
	__be32 qs = q->saddr == p->daddr ? x->daddr : q->saddr;
	__be32 qd = q->daddr == x->src_of ? x->saddr : q->daddr;
	__be16 qsport = q->ports ? x->quote_sport : q->sport;
	if (qs == q->saddr && qd == q->daddr && qsport == q->sport)
		return 0;

	__u32 ip_csum_off = q->ip + offsetof(struct iphdr, check);
	__u16 icmp, ip_old, l4_old = 0, l4_new = 0;
	if (strait_load(skb, p->l4_csum, &icmp, sizeof(icmp)) || strait_load(skb, ip_csum_off, &ip_old, sizeof(ip_old)))
		return -1;
	__u16 ip_new = strait_csum_replace4(strait_csum_replace4(ip_old, q->saddr, qs), q->daddr, qd);
	if (q->l4_csum) {
		if (strait_load(skb, q->l4_csum, &l4_old, sizeof(l4_old)))
			return -1;
		l4_new = l4_old;
		/* A zero UDP checksum means "not computed": it stays zero, and a computed one never becomes zero. */
		if (!(q->udp && l4_old == 0)) {
			l4_new = strait_csum_replace4(strait_csum_replace4(l4_old, q->saddr, qs), q->daddr, qd);
			l4_new = strait_csum_replace2(l4_new, q->sport, qsport);
			if (q->udp && l4_new == 0)
				l4_new = 0xffff;
		}
	}
	/* The ICMP checksum covers the quote: its addresses, port and both checksums changed. */
	icmp = strait_csum_replace4(icmp, q->saddr, qs);
	icmp = strait_csum_replace4(icmp, q->daddr, qd);
	icmp = strait_csum_replace2(icmp, q->sport, qsport);
	icmp = strait_csum_replace2(icmp, ip_old, ip_new);
	icmp = strait_csum_replace2(icmp, l4_old, l4_new);

	if (bpf_skb_store_bytes(skb, q->ip + offsetof(struct iphdr, saddr), &qs, sizeof(qs), 0) ||
	    bpf_skb_store_bytes(skb, q->ip + offsetof(struct iphdr, daddr), &qd, sizeof(qd), 0) ||
	    bpf_skb_store_bytes(skb, ip_csum_off, &ip_new, sizeof(ip_new), 0) ||
	    (q->l4_csum && bpf_skb_store_bytes(skb, q->l4_csum, &l4_new, sizeof(l4_new), 0)) ||
	    (qsport != q->sport && bpf_skb_store_bytes(skb, q->ports, &qsport, sizeof(qsport), 0)) ||
	    bpf_skb_store_bytes(skb, p->l4_csum, &icmp, sizeof(icmp), 0))
		return -1;
	return 0;
}
