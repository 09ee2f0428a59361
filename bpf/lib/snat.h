/* Transit SNAT on the hub (docs/datapath.md: why in BPF rather than conntrack). Each flow has two LRU
 * entries: forward (original 5-tuple → allocated port) and reverse (reply 5-tuple → original source).
 * ICMP echo uses its identifier as both ports.
 *
 * An established flow only reads the map: a write per packet (an LRU update takes locks and moves
 * list nodes) cost more than the rest of the program. Each direction looks up the other half too,
 * which keeps both halves referenced alike in the LRU, and puts it back if the LRU evicted it alone. */
#pragma once

#include "maps.h"
#include "nat.h"

#define STRAIT_SNAT_PORT_MIN 32768
#define STRAIT_SNAT_TRIES 8

/* Only what has ports (or an echo identifier) in this packet can be mapped back. */
static __always_inline bool strait_snat_possible(const struct strait_pkt *p)
{
	return !p->later_frag && (p->icmp_echo || p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP);
}

static __always_inline struct strait_flow_key strait_flow(__be32 saddr, __be32 daddr, __be16 sport, __be16 dport, __u8 proto)
{
	return (struct strait_flow_key){ .saddr = saddr, .daddr = daddr, .sport = sport, .dport = dport, .proto = proto };
}

/* The reply's key for a forward flow `x` (after DNAT) whose source became transit:port. */
static __always_inline struct strait_flow_key strait_snat_reply_key(const struct strait_pkt *p, const struct strait_xlate *x, __be32 transit, __be16 port)
{
	return strait_flow(x->daddr, transit, p->icmp_echo ? port : x->dport, port, p->proto);
}

static __always_inline bool strait_snat_closed(__u16 flags)
{
	return (flags & STRAIT_SNAT_RST) ||
	       (flags & (STRAIT_SNAT_FIN_FORWARD | STRAIT_SNAT_FIN_REPLY)) == (STRAIT_SNAT_FIN_FORWARD | STRAIT_SNAT_FIN_REPLY);
}

/* Records what this packet says about the TCP flow's close on its reverse entry; a new SYN reopens it
 * (a client reusing its port). A plain store, and only on SYN, FIN and RST packets. */
static __always_inline void strait_snat_track_close(const struct strait_pkt *p, struct strait_snat_entry *rev, __u16 fin)
{
	if (p->proto != IPPROTO_TCP)
		return;
	__u16 flags = rev->flags;
	if ((p->tcp_flags & (STRAIT_TCP_SYN | STRAIT_TCP_ACK)) == STRAIT_TCP_SYN)
		flags = 0;
	if (p->tcp_flags & STRAIT_TCP_FIN)
		flags |= fin;
	if (p->tcp_flags & STRAIT_TCP_RST)
		flags |= STRAIT_SNAT_RST;
	if (flags == rev->flags)
		return;
	bool was_closed = strait_snat_closed(rev->flags);
	rev->flags = flags;
	if (!strait_snat_closed(flags))
		rev->closed_ns = 0;
	else if (!was_closed)
		rev->closed_ns = bpf_ktime_get_ns();
}

/* A port whose flow closed long enough ago is free. */
static __always_inline bool strait_snat_reusable(const struct strait_snat_entry *rev, __u64 now)
{
	return strait_snat_closed(rev->flags) && now - rev->closed_ns >= STRAIT_SNAT_REUSE_AFTER_NS;
}

/* Claims the port of reply key `rev` for the flow going back to `back`, when no flow holds it or its
 * flow closed long enough ago (looked up first: a failed insert into a full LRU evicts for nothing). */
static __always_inline bool strait_snat_claim(struct strait_flow_key *rev, const struct strait_snat_entry *back, __u64 now)
{
	struct strait_snat_entry *taken = bpf_map_lookup_elem(&strait_snat, rev);
	if (taken)
		return strait_snat_reusable(taken, now) && bpf_map_update_elem(&strait_snat, rev, back, BPF_EXIST) == 0;
	return bpf_map_update_elem(&strait_snat, rev, back, BPF_NOEXIST) == 0;
}

/* A free port for the flow: its reverse entry is written first, with BPF_NOEXIST, which claims the
 * port. Taken candidates are found by lookup: a failed insert into a full LRU evicts for nothing. A
 * port whose TCP flow closed over a second ago is free: its entry is overwritten (otherwise a
 * destination that sees thousands of short connections a second would hold all 32,768 ports within
 * seconds). */
static __always_inline __be16 strait_snat_allocate(const struct strait_pkt *p, const struct strait_xlate *x, __be32 transit,
						    const struct strait_snat_entry *back)
{
	__u64 now = bpf_ktime_get_ns();
	/* The source's own port first, as conntrack's NAT keeps it: a server still holding the last
	 * connection of that port in TIME_WAIT accepts the new SYN only with newer timestamps, and a
	 * client's timestamps only grow for the same ports (offsets are per connection). */
	if (bpf_ntohs(x->sport) >= STRAIT_SNAT_PORT_MIN) {
		struct strait_flow_key own = strait_snat_reply_key(p, x, transit, x->sport);
		if (strait_snat_claim(&own, back, now))
			return x->sport;
	}
	__u32 start = bpf_get_prandom_u32();
	__be16 first = bpf_htons(STRAIT_SNAT_PORT_MIN + (start & 0x7fff));
	for (int i = 0; i < STRAIT_SNAT_TRIES; i++) {
		__be16 candidate = bpf_htons(STRAIT_SNAT_PORT_MIN + ((start + i) & 0x7fff));
		struct strait_flow_key rev = strait_snat_reply_key(p, x, transit, candidate);
		if (strait_snat_claim(&rev, back, now))
			return candidate;
	}
	/* All taken. Nothing expires in an LRU: a map full of finished flows toward this destination
	 * would refuse it forever, as no insert happens to evict them. This insert fails as well (nothing
	 * written), but on a full map the LRU first evicts its coldest entries, whose ports the next flows
	 * find free; and if it evicted this very entry, the port is ours. */
	struct strait_flow_key rev = strait_snat_reply_key(p, x, transit, first);
	if (bpf_map_update_elem(&strait_snat, &rev, back, BPF_NOEXIST) == 0)
		return first;
	return 0;
}

/* Forward: the source of `x` becomes transit:port, reusing the flow's port or allocating a free one. */
static __always_inline int strait_snat_forward(const struct strait_pkt *p, struct strait_xlate *x, __be32 transit)
{
	if (!transit || !strait_snat_possible(p))
		return -1;
	struct strait_flow_key fwd = strait_flow(x->saddr, x->daddr, x->sport, x->dport, p->proto);
	struct strait_snat_entry back = { .addr = x->saddr, .port = x->sport };
	struct strait_snat_entry *known = bpf_map_lookup_elem(&strait_snat, &fwd);
	__be16 port = 0;
	if (known) {
		port = known->port;
		struct strait_flow_key rev = strait_snat_reply_key(p, x, transit, port);
		struct strait_snat_entry *r = bpf_map_lookup_elem(&strait_snat, &rev);
		/* The reverse half evicted alone: put it back, unless another flow took the port meanwhile
		 * (then, as when the insert finds it taken, this flow needs a new port). */
		if (!r && bpf_map_update_elem(&strait_snat, &rev, &back, BPF_NOEXIST) != 0)
			r = bpf_map_lookup_elem(&strait_snat, &rev);
		if (r && (r->addr != back.addr || r->port != back.port))
			known = 0;
		else if (r)
			strait_snat_track_close(p, r, STRAIT_SNAT_FIN_FORWARD);
	}
	if (!known) {
		port = strait_snat_allocate(p, x, transit, &back);
		if (!port)
			return -1;
		struct strait_snat_entry out = { .addr = transit, .port = port };
		if (bpf_map_update_elem(&strait_snat, &fwd, &out, BPF_ANY)) {
			struct strait_flow_key rev = strait_snat_reply_key(p, x, transit, port);
			bpf_map_delete_elem(&strait_snat, &rev);
			return -1;
		}
	}
	x->saddr = transit;
	if (p->icmp_echo)
		x->dport = port;
	x->sport = port;
	return 0;
}

/* Reverse: a reply to transit:port gets the original source back as its destination. */
static __always_inline int strait_snat_reverse(const struct strait_pkt *p, struct strait_xlate *x)
{
	if (!strait_snat_possible(p))
		return -1;
	struct strait_flow_key rev = strait_flow(x->saddr, x->daddr, x->sport, x->dport, p->proto);
	struct strait_snat_entry *found = bpf_map_lookup_elem(&strait_snat, &rev);
	if (!found)
		return -1;
	strait_snat_track_close(p, found, STRAIT_SNAT_FIN_REPLY);
	/* A copy: an insert into a full LRU may recycle the element `found` points to. */
	struct strait_snat_entry orig = *found;
	/* The forward half evicted alone: put it back, so the flow's next packet keeps its port. If it
	 * is there with another port, the flow moved on: leave it. */
	struct strait_flow_key fwd = strait_flow(orig.addr, x->saddr, orig.port, p->icmp_echo ? orig.port : x->sport, p->proto);
	if (!bpf_map_lookup_elem(&strait_snat, &fwd)) {
		struct strait_snat_entry out = { .addr = x->daddr, .port = x->dport };
		bpf_map_update_elem(&strait_snat, &fwd, &out, BPF_NOEXIST);
	}
	x->daddr = orig.addr;
	if (p->icmp_echo)
		x->sport = orig.port;
	x->dport = orig.port;
	return 0;
}

/* An ICMP error about a transit flow quotes our forward packet (source transit:port): the reply key is
 * read from the quote, and the quote gets the original source and port back. */
static __always_inline int strait_snat_reverse_error(const struct strait_pkt *p, struct strait_xlate *x, __be32 transit)
{
	const struct strait_quote *q = &p->quote;
	if (!q->ports)
		return -1;
	struct strait_flow_key rev = strait_flow(q->daddr, transit, q->dport, q->sport, q->proto);
	struct strait_snat_entry *orig = bpf_map_lookup_elem(&strait_snat, &rev);
	if (!orig)
		return -1;
	x->daddr = orig->addr;
	x->quote_sport = orig->port;
	return 0;
}
