/* Transit SNAT on the hub (docs/datapath.md: why in BPF rather than conntrack). Each flow has two LRU
 * entries: forward (original 5-tuple → allocated port) and reverse (reply 5-tuple → original source).
 * ICMP echo uses its identifier as both ports.
 *
 * One engine for both families (strait_snat, strait_snat6): it works on a family's keys and entries
 * through their address length `alen` (4 or 16, a constant once inlined), since after the addresses
 * both families' keys end in struct strait_flow_ports and their entries have the same fields
 * (STRAIT_SNAT_*).
 * The IPv4 wrappers are at the end; the IPv6 ones in transit6.h.
 *
 * An established flow only reads the map: a write per packet (an LRU update takes locks and moves
 * list nodes) cost more than the rest of the program. Each direction looks up the other half too,
 * which keeps both halves referenced alike in the LRU, and puts it back if the LRU evicted it alone. */
#pragma once

#include "maps.h"
#include "nat.h"

#define STRAIT_SNAT_PORT_MIN 32768
#define STRAIT_SNAT_TRIES 8

/* The fields after the addresses, alike in strait_flow_key and strait_flow6_key. */
struct strait_flow_ports {
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 _pad[3];
};

/* Where the fields after the address are in an entry of either family (strait_snat_entry,
 * strait_snat6_entry): the port and flags right after it, closed_ns at the next 8-byte boundary after
 * the 4 bytes of padding. */
#define STRAIT_SNAT_PORT(entry, alen) ((__be16 *)((__u8 *)(entry) + (alen)))
#define STRAIT_SNAT_FLAGS(entry, alen) ((__u16 *)((__u8 *)(entry) + (alen) + 2))
#define STRAIT_SNAT_CLOSED_OFF(alen) (((alen) + 8 + 7) & ~7u)
#define STRAIT_SNAT_CLOSED(entry, alen) ((__u64 *)((__u8 *)(entry) + STRAIT_SNAT_CLOSED_OFF(alen)))
/* The bytes the engine reads of an entry: a field a later release appends (docs/datapath.md, "Changing a
 * map's layout") comes after them, in the entries the wrappers declare whole and zeroed. */
#define STRAIT_SNAT_SIZE(alen) (STRAIT_SNAT_CLOSED_OFF(alen) + sizeof(__u64))

_Static_assert(__builtin_offsetof(struct strait_flow_key, sport) == 2 * sizeof(__be32) &&
		       sizeof(struct strait_flow_key) == 2 * sizeof(__be32) + sizeof(struct strait_flow_ports),
	       "strait_flow_key: addresses, then strait_flow_ports");
_Static_assert(__builtin_offsetof(struct strait_flow6_key, sport) == 2 * sizeof(struct strait_in6) &&
		       sizeof(struct strait_flow6_key) == 2 * sizeof(struct strait_in6) + sizeof(struct strait_flow_ports),
	       "strait_flow6_key: addresses, then strait_flow_ports");
_Static_assert(__builtin_offsetof(struct strait_snat_entry, port) == sizeof(__be32) &&
		       __builtin_offsetof(struct strait_snat_entry, flags) == sizeof(__be32) + 2 &&
		       __builtin_offsetof(struct strait_snat_entry, closed_ns) == STRAIT_SNAT_CLOSED_OFF(sizeof(__be32)) &&
		       sizeof(struct strait_snat_entry) >= STRAIT_SNAT_SIZE(sizeof(__be32)),
	       "strait_snat_entry: the layout STRAIT_SNAT_* reads");
_Static_assert(__builtin_offsetof(struct strait_snat6_entry, port) == sizeof(struct strait_in6) &&
		       __builtin_offsetof(struct strait_snat6_entry, flags) == sizeof(struct strait_in6) + 2 &&
		       __builtin_offsetof(struct strait_snat6_entry, closed_ns) == STRAIT_SNAT_CLOSED_OFF(sizeof(struct strait_in6)) &&
		       sizeof(struct strait_snat6_entry) >= STRAIT_SNAT_SIZE(sizeof(struct strait_in6)),
	       "strait_snat6_entry: the layout STRAIT_SNAT_* reads");

#define STRAIT_FLOW_PORTS(key, alen) ((struct strait_flow_ports *)((__u8 *)(key) + 2 * (alen)))

/* What the engine needs of a packet besides its addresses and ports. */
struct strait_snat_pkt {
	__u8 proto;
	__u8 tcp_flags;
	bool echo; /* ICMP or ICMPv6 echo: the identifier is both ports */
};

static __always_inline bool strait_addr_same(const void *a, const void *b, __u32 alen)
{
	const __u32 *x = a, *y = b;
	__u32 d = 0;
#pragma unroll
	for (__u32 i = 0; i < alen / 4; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

/* Fills a key (zeroed by its owner: the padding stays zero) of either family. */
static __always_inline void strait_flow_fill(void *key, __u32 alen, const void *saddr, const void *daddr, __be16 sport, __be16 dport, __u8 proto)
{
	__builtin_memcpy(key, saddr, alen);
	__builtin_memcpy((__u8 *)key + alen, daddr, alen);
	struct strait_flow_ports *t = STRAIT_FLOW_PORTS(key, alen);
	t->sport = sport;
	t->dport = dport;
	t->proto = proto;
}

/* The ports of the reply key of a flow given `port`; `dport`: the flow's destination port. */
static __always_inline void strait_snat_reply_ports(void *rev, __u32 alen, __be16 dport, bool echo, __be16 port)
{
	struct strait_flow_ports *t = STRAIT_FLOW_PORTS(rev, alen);
	t->sport = echo ? port : dport;
	t->dport = port;
}

static __always_inline bool strait_snat_closed(__u16 flags)
{
	return (flags & STRAIT_SNAT_RST) ||
	       (flags & (STRAIT_SNAT_FIN_FORWARD | STRAIT_SNAT_FIN_REPLY)) == (STRAIT_SNAT_FIN_FORWARD | STRAIT_SNAT_FIN_REPLY);
}

/* Records what this packet says about the TCP flow's close on its reverse entry; a new SYN reopens it
 * (a client reusing its port). A plain store, and only on SYN, FIN and RST packets. */
static __always_inline void strait_snat_track_close(const struct strait_snat_pkt *p, void *rev, __u32 alen, __u16 fin)
{
	if (p->proto != IPPROTO_TCP)
		return;
	__u16 old = *STRAIT_SNAT_FLAGS(rev, alen), flags = old;
	if ((p->tcp_flags & (STRAIT_TCP_SYN | STRAIT_TCP_ACK)) == STRAIT_TCP_SYN)
		flags = 0;
	if (p->tcp_flags & STRAIT_TCP_FIN)
		flags |= fin;
	if (p->tcp_flags & STRAIT_TCP_RST)
		flags |= STRAIT_SNAT_RST;
	if (flags == old)
		return;
	*STRAIT_SNAT_FLAGS(rev, alen) = flags;
	if (!strait_snat_closed(flags))
		*STRAIT_SNAT_CLOSED(rev, alen) = 0;
	else if (!strait_snat_closed(old))
		*STRAIT_SNAT_CLOSED(rev, alen) = bpf_ktime_get_ns();
}

/* A port whose flow closed long enough ago is free. */
static __always_inline bool strait_snat_reusable(void *rev, __u32 alen, __u64 now)
{
	return strait_snat_closed(*STRAIT_SNAT_FLAGS(rev, alen)) && now - *STRAIT_SNAT_CLOSED(rev, alen) >= STRAIT_SNAT_REUSE_AFTER_NS;
}

/* Claims the port of reply key `rev` for the flow going back to `back`, when no flow holds it or its
 * flow closed long enough ago (looked up first: a failed insert into a full LRU evicts for nothing). */
static __always_inline bool strait_snat_claim(void *map, __u32 alen, const void *rev, const void *back, __u64 now)
{
	void *taken = bpf_map_lookup_elem(map, rev);
	if (taken)
		return strait_snat_reusable(taken, alen, now) && bpf_map_update_elem(map, rev, back, BPF_EXIST) == 0;
	return bpf_map_update_elem(map, rev, back, BPF_NOEXIST) == 0;
}

/* A free port for the flow: its reverse entry is written first, with BPF_NOEXIST, which claims the
 * port. Taken candidates are found by lookup: a failed insert into a full LRU evicts for nothing. A
 * port whose TCP flow closed over a second ago is free: its entry is overwritten (otherwise a
 * destination that sees thousands of short connections a second would hold all 32,768 ports within
 * seconds). `rev`: the reply key, addresses and protocol set; its ports are set here (to the port
 * returned when one is). `own`: the flow's source port, `dport` its destination port. */
static __always_inline __be16 strait_snat_allocate(void *map, __u32 alen, void *rev, __be16 own, __be16 dport, bool echo, const void *back)
{
	__u64 now = bpf_ktime_get_ns();
	/* The source's own port first, as conntrack's NAT keeps it: a server still holding the last
	 * connection of that port in TIME_WAIT accepts the new SYN only with newer timestamps, and a
	 * client's timestamps only grow for the same ports (offsets are per connection). */
	if (bpf_ntohs(own) >= STRAIT_SNAT_PORT_MIN) {
		strait_snat_reply_ports(rev, alen, dport, echo, own);
		if (strait_snat_claim(map, alen, rev, back, now))
			return own;
	}
	__u32 start = bpf_get_prandom_u32();
	__be16 first = bpf_htons(STRAIT_SNAT_PORT_MIN + (start & 0x7fff));
	for (int i = 0; i < STRAIT_SNAT_TRIES; i++) {
		__be16 candidate = bpf_htons(STRAIT_SNAT_PORT_MIN + ((start + i) & 0x7fff));
		strait_snat_reply_ports(rev, alen, dport, echo, candidate);
		if (strait_snat_claim(map, alen, rev, back, now))
			return candidate;
	}
	/* All taken. Nothing expires in an LRU: a map full of finished flows toward this destination
	 * would refuse it forever, as no insert happens to evict them. This insert fails as well (nothing
	 * written), but on a full map the LRU first evicts its coldest entries, whose ports the next flows
	 * find free; and if it evicted this very entry, the port is ours. */
	strait_snat_reply_ports(rev, alen, dport, echo, first);
	if (bpf_map_update_elem(map, rev, back, BPF_NOEXIST) == 0)
		return first;
	return 0;
}

/* Forward: the port of flow `fwd` (its source and ports in `back`, its destination port `dport`),
 * reusing the flow's or allocating a free one; 0: none. `rev`: its reply key with the addresses and
 * protocol set; `out`: its forward entry with the transit address set. */
static __always_inline __be16 strait_snat_out(void *map, __u32 alen, const struct strait_snat_pkt *p, const void *fwd, void *rev,
					      const void *back, void *out, __be16 dport)
{
	__be16 own = *STRAIT_SNAT_PORT(back, alen);
	void *known = bpf_map_lookup_elem(map, fwd);
	__be16 port = 0;
	if (known) {
		port = *STRAIT_SNAT_PORT(known, alen);
		strait_snat_reply_ports(rev, alen, dport, p->echo, port);
		void *r = bpf_map_lookup_elem(map, rev);
		/* The reverse half evicted alone: put it back, unless another flow took the port meanwhile
		 * (then, as when the insert finds it taken, this flow needs a new port). */
		if (!r && bpf_map_update_elem(map, rev, back, BPF_NOEXIST) != 0)
			r = bpf_map_lookup_elem(map, rev);
		if (r && (!strait_addr_same(r, back, alen) || *STRAIT_SNAT_PORT(r, alen) != own))
			known = 0;
		else if (r)
			strait_snat_track_close(p, r, alen, STRAIT_SNAT_FIN_FORWARD);
	}
	if (!known) {
		port = strait_snat_allocate(map, alen, rev, own, dport, p->echo, back);
		if (!port)
			return 0;
		*STRAIT_SNAT_PORT(out, alen) = port;
		if (bpf_map_update_elem(map, fwd, out, BPF_ANY)) {
			bpf_map_delete_elem(map, rev);
			return 0;
		}
	}
	return port;
}

/* Reverse: the reply `rev` (as it arrives, to transit:port) finds its flow; `orig` gets the reverse
 * entry (the original source and port). `fwd` and `out`: room for the forward half, zeroed. */
static __always_inline int strait_snat_in(void *map, __u32 alen, const struct strait_snat_pkt *p, const void *rev, void *orig, void *fwd,
					  void *out)
{
	void *found = bpf_map_lookup_elem(map, rev);
	if (!found)
		return -1;
	strait_snat_track_close(p, found, alen, STRAIT_SNAT_FIN_REPLY);
	/* A copy: an insert into a full LRU may recycle the element `found` points to. */
	__builtin_memcpy(orig, found, STRAIT_SNAT_SIZE(alen));
	/* The forward half evicted alone: put it back, so the flow's next packet keeps its port. If it
	 * is there with another port, the flow moved on: leave it. */
	const struct strait_flow_ports *r = STRAIT_FLOW_PORTS(rev, alen);
	__be16 oport = *STRAIT_SNAT_PORT(orig, alen);
	strait_flow_fill(fwd, alen, orig, rev, oport, p->echo ? oport : r->sport, p->proto);
	if (!bpf_map_lookup_elem(map, fwd)) {
		__builtin_memcpy(out, (const __u8 *)rev + alen, alen);
		*STRAIT_SNAT_PORT(out, alen) = r->dport;
		bpf_map_update_elem(map, fwd, out, BPF_NOEXIST);
	}
	return 0;
}

/* IPv4. Only what has ports (or an echo identifier) in this packet can be mapped back. */
static __always_inline bool strait_snat_possible(const struct strait_pkt *p)
{
	return !p->later_frag && (p->icmp_echo || p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP);
}

static __always_inline struct strait_flow_key strait_flow(__be32 saddr, __be32 daddr, __be16 sport, __be16 dport, __u8 proto)
{
	return (struct strait_flow_key){ .saddr = saddr, .daddr = daddr, .sport = sport, .dport = dport, .proto = proto };
}

static __always_inline struct strait_snat_pkt strait_snat_pkt_of(const struct strait_pkt *p)
{
	return (struct strait_snat_pkt){ .proto = p->proto, .tcp_flags = p->tcp_flags, .echo = p->icmp_echo };
}

/* Forward: the source of `x` becomes transit:port, reusing the flow's port or allocating a free one. */
static __always_inline int strait_snat_forward(const struct strait_pkt *p, struct strait_xlate *x, __be32 transit)
{
	if (!transit || !strait_snat_possible(p))
		return -1;
	struct strait_snat_pkt sp = strait_snat_pkt_of(p);
	struct strait_flow_key fwd = strait_flow(x->saddr, x->daddr, x->sport, x->dport, p->proto);
	struct strait_flow_key rev = strait_flow(x->daddr, transit, 0, 0, p->proto);
	struct strait_snat_entry back = { .addr = x->saddr, .port = x->sport };
	struct strait_snat_entry out = { .addr = transit };
	__be16 port = strait_snat_out(&strait_snat, sizeof(__be32), &sp, &fwd, &rev, &back, &out, x->dport);
	if (!port)
		return -1;
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
	struct strait_snat_pkt sp = strait_snat_pkt_of(p);
	struct strait_flow_key rev = strait_flow(x->saddr, x->daddr, x->sport, x->dport, p->proto);
	struct strait_flow_key fwd = {};
	struct strait_snat_entry orig, out = {};
	if (strait_snat_in(&strait_snat, sizeof(__be32), &sp, &rev, &orig, &fwd, &out))
		return -1;
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
