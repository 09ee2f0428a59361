/* What a decision wants a packet to become. Decisions only fill this in; nat.h applies it once. */
#pragma once

#include "parse.h"

struct strait_xlate {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	/* ICMP errors: the quote travelled the other way. A quoted destination equal to `src_of` (the
	 * address saddr stands for: normally the packet's own source) becomes saddr; a quoted source equal
	 * to the packet's destination becomes daddr, with its port set to `quote_sport`. */
	__be32 src_of;
	__be16 quote_sport;
};

/* The packet as it is: nothing to change yet. */
static __always_inline struct strait_xlate strait_xlate_of(const struct strait_pkt *p)
{
	return (struct strait_xlate){
		.saddr = p->saddr,
		.daddr = p->daddr,
		.sport = p->sport,
		.dport = p->dport,
		.src_of = p->saddr,
		.quote_sport = p->quote.sport,
	};
}
