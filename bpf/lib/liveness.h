/* Gateway liveness measured where the traffic flows (docs/liveness.md): a probe to this node's underlay
 * (or public) address on the liveness port is turned around on the device it arrived on, in the
 * datapath, with the word the agent last wrote. So a node answers while its programs run, whether its
 * agent is running, restarting or gone; a node whose programs are gone (or whose kernel is) does not.
 * Everything else goes on to the next program or the stack untouched. */
#pragma once

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "common.h"

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

/* Turns a probe request around in place: Ethernet and IP addresses and UDP ports swapped, a fresh TTL,
 * the reply's fields written; the UDP checksum becomes zero (none, as IPv4 allows) rather than updated.
 * Then out of the device it came in on. */
static __always_inline int strait_liveness_ingress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + ETH_HLEN;
	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return STRAIT_NEXT;
	/* Options would move the UDP header; a fragment is not a whole probe. Probes carry neither. */
	if (ip->ihl != 5 || ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(0x3fff)))
		return STRAIT_NEXT;
	struct udphdr *udp = (void *)(ip + 1);
	struct strait_probe *probe = (void *)(udp + 1);
	if ((void *)(probe + 1) > end)
		return STRAIT_NEXT;
	__u32 zero = 0;
	const struct strait_liveness *l = bpf_map_lookup_elem(&strait_liveness, &zero);
	if (!l || !l->port || udp->dest != bpf_htons(l->port) || !strait_is_probe_target(l, ip->daddr))
		return STRAIT_NEXT;
	if (probe->magic != bpf_htonl(STRAIT_PROBE_MAGIC) || probe->version != STRAIT_PROBE_VERSION ||
	    probe->type != STRAIT_PROBE_REQUEST)
		return STRAIT_NEXT;

	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
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
	__be16 port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
	udp->check = 0;
	probe->type = STRAIT_PROBE_REPLY;
	probe->state = l->state;
	probe->generation = bpf_htonl(l->generation);
	return bpf_redirect(skb->ifindex, 0);
}
