/* Gateway liveness measured where the traffic flows (docs/liveness.md): a probe to this node's underlay
 * (or public) address, IPv4 or IPv6, on the liveness port is turned around on the device it arrived on, in the
 * datapath, with the word the agent last wrote. So a node answers while its programs run, whether its
 * agent is running, restarting or gone; a node whose programs are gone (or whose kernel is) does not.
 * Everything else goes on to the next program or the stack untouched. */
#pragma once

#include <stddef.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "common.h"
#include "in6.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct strait_liveness);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_liveness SEC(".maps");

/* Not ours: the next tcx program, or the next clsact filter (TC_ACT_OK would end a clsact chain). */
#define STRAIT_NEXT TC_ACT_UNSPEC

static __always_inline bool strait_is_probe_target(const struct strait_liveness *l, __be32 daddr)
{
	return daddr && (daddr == l->addrs[0] || daddr == l->addrs[1]);
}

static __always_inline bool strait_is_probe_target6(const struct strait_liveness *l, const struct strait_in6 *daddr)
{
	return !strait_in6_zero(daddr) && (strait_in6_same(daddr, &l->addrs6[0]) || strait_in6_same(daddr, &l->addrs6[1]));
}

/* The responder's settings when it answers on UDP port `dport` and `probe` is a request of ours. */
static __always_inline const struct strait_liveness *strait_probe_for_us(__be16 dport, const struct strait_probe *probe)
{
	__u32 zero = 0;
	const struct strait_liveness *l = bpf_map_lookup_elem(&strait_liveness, &zero);
	if (!l || !l->port || dport != bpf_htons(l->port))
		return 0;
	if (probe->magic != bpf_htonl(STRAIT_PROBE_MAGIC) || probe->version != STRAIT_PROBE_VERSION ||
	    probe->type != STRAIT_PROBE_REQUEST)
		return 0;
	return l;
}

/* The Ethernet addresses and UDP ports swapped, the probe made the reply (the IP header is the caller's). */
static __always_inline void strait_probe_turn(struct ethhdr *eth, struct udphdr *udp, struct strait_probe *probe,
					      const struct strait_liveness *l)
{
	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	__be16 port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
	probe->type = STRAIT_PROBE_REPLY;
	probe->state = l->state;
	probe->generation = bpf_htonl(l->generation);
}

/* Turns a probe request around in place: Ethernet and IP addresses and UDP ports swapped, a fresh TTL,
 * the reply's fields written; the UDP checksum becomes zero (none, as IPv4 allows) rather than updated.
 * Then out of the device it came in on. */
static __always_inline int strait_liveness_ingress4(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + ETH_HLEN;
	if ((void *)(ip + 1) > end)
		return STRAIT_NEXT;
	/* Options would move the UDP header; a fragment is not a whole probe. Probes carry neither. */
	if (ip->ihl != 5 || ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(0x3fff)))
		return STRAIT_NEXT;
	struct udphdr *udp = (void *)(ip + 1);
	struct strait_probe *probe = (void *)(udp + 1);
	if ((void *)(probe + 1) > end)
		return STRAIT_NEXT;
	const struct strait_liveness *l = strait_probe_for_us(udp->dest, probe);
	if (!l || !strait_is_probe_target(l, ip->daddr))
		return STRAIT_NEXT;

	strait_probe_turn(eth, udp, probe, l);
	__be32 addr = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = addr;
	/* The checksum sums 16-bit words: swapping the addresses leaves it; the TTL (high byte of its word) does not. */
	__u16 before = bpf_ntohs(*(__be16 *)&ip->ttl);
	ip->ttl = STRAIT_PROBE_TTL;
	__u16 after = bpf_ntohs(*(__be16 *)&ip->ttl);
	__u32 sum = (__u16)~bpf_ntohs(ip->check) + (__u16)~before + after;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = bpf_htons(~sum & 0xffff);
	udp->check = 0;
	return bpf_redirect(skb->ifindex, 0);
}

/* The same over IPv6, whose UDP checksum is mandatory: swapping the addresses and the ports leaves it
 * (the pseudo-header sums both addresses, the hop limit is not in it), the reply's fields are added to
 * it by bpf_l4_csum_replace, which leaves a checksum the device completes (CHECKSUM_PARTIAL, a local
 * sender's) alone and never writes 0 ("none", which IPv6 forbids). A probe has no extension header. */
static __always_inline int strait_liveness_ingress6(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = data + ETH_HLEN;
	if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
		return STRAIT_NEXT;
	struct udphdr *udp = (void *)(ip6 + 1);
	struct strait_probe *probe = (void *)(udp + 1);
	if ((void *)(probe + 1) > end)
		return STRAIT_NEXT;
	const struct strait_liveness *l = strait_probe_for_us(udp->dest, probe);
	struct strait_in6 daddr;
	__builtin_memcpy(&daddr, &ip6->daddr, sizeof(daddr));
	if (!l || !strait_is_probe_target6(l, &daddr))
		return STRAIT_NEXT;

	struct strait_probe request = *probe;
	strait_probe_turn(eth, udp, probe, l);
	struct strait_probe reply = *probe;
	__builtin_memcpy(&ip6->daddr, &ip6->saddr, sizeof(ip6->daddr));
	__builtin_memcpy(&ip6->saddr, &daddr, sizeof(daddr));
	ip6->hop_limit = STRAIT_PROBE_TTL;
	__s64 diff = bpf_csum_diff((__be32 *)&request, sizeof(request), (__be32 *)&reply, sizeof(reply), 0);
	if (diff < 0 || bpf_l4_csum_replace(skb, ETH_HLEN + sizeof(struct ipv6hdr) + offsetof(struct udphdr, check), 0, diff,
					    BPF_F_MARK_MANGLED_0))
		return TC_ACT_SHOT;
	return bpf_redirect(skb->ifindex, 0);
}

static __always_inline int strait_liveness_ingress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return STRAIT_NEXT;
	if (eth->h_proto == bpf_htons(ETH_P_IP))
		return strait_liveness_ingress4(skb);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return strait_liveness_ingress6(skb);
	return STRAIT_NEXT;
}
