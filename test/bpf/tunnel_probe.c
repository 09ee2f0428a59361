// Wraps the datapath's entry logic and records the tunnel key it chose and the packet type it left, which
// the output packet of BPF_PROG_TEST_RUN cannot show. Loaded with the datapath's pin root, it shares its maps.
// strait_progs among them: the fixture puts this object's strait_transit6 (the same logic, recorded) in the
// slot the datapath's strait_from_overlay tail-calls, so IPv6 transit is recorded whichever program ran.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "datapath.h"
#include "transit6.h"

char LICENSE[] SEC("license") = "GPL";

struct probe_tunnel {
	__u32 remote_ipv4; /* host order, as in struct bpf_tunnel_key */
	__u32 tunnel_id;
	__u32 ttl;
	__u32 found; /* 1: the packet carries a tunnel key; 2: an IPv6 one (remote_ipv6) */
	__u32 pkt_type; /* skb->pkt_type after the program */
	__u32 remote_ipv6[4]; /* network order, as in struct bpf_tunnel_key */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct probe_tunnel);
} probe_tunnel SEC(".maps");

static __always_inline int probe_record(struct __sk_buff *skb, int verdict)
{
	__u32 zero = 0;
	struct probe_tunnel *out = bpf_map_lookup_elem(&probe_tunnel, &zero);
	struct bpf_tunnel_key key = {};
	if (!out)
		return verdict;
	out->found = bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0) == 0;
	if (!out->found && bpf_skb_get_tunnel_key(skb, &key, sizeof(key), BPF_F_TUNINFO_IPV6) == 0)
		out->found = 2;
	/* get_tunnel_key reads as a receiver would: the remote end we set comes back as local_ipv4 (local_ipv6). */
	out->remote_ipv4 = out->found == 1 ? key.local_ipv4 : 0;
	__builtin_memcpy(out->remote_ipv6, key.local_ipv6, sizeof(out->remote_ipv6));
	if (out->found != 2)
		__builtin_memset(out->remote_ipv6, 0, sizeof(out->remote_ipv6));
	out->tunnel_id = out->found ? key.tunnel_id : 0;
	out->ttl = out->found ? key.tunnel_ttl : 0;
	out->pkt_type = skb->pkt_type;
	return verdict;
}

SEC("tc")
int probe_from_pod(struct __sk_buff *skb)
{
	return probe_record(skb, strait_pod_ingress(skb));
}

SEC("tc")
int probe_from_overlay(struct __sk_buff *skb)
{
	return probe_record(skb, strait_overlay_ingress(skb));
}

/* The VNI the next packet of probe_from_overlay_vni arrived on (BPF_PROG_TEST_RUN has no tunnel), at
 * key 0; at key 1, 1 when the tunnel is over IPv6. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} probe_vni SEC(".maps");

SEC("tc")
int probe_from_overlay_vni(struct __sk_buff *skb)
{
	__u32 zero = 0, one = 1;
	const __u32 *vni = bpf_map_lookup_elem(&probe_vni, &zero);
	const __u32 *ipv6 = bpf_map_lookup_elem(&probe_vni, &one);
	struct bpf_tunnel_key key = { .tunnel_id = vni ? *vni : 0, .tunnel_ttl = 64 };
	/* From fd00::1 over IPv6; from 192.0.2.1 over IPv4 (remote_ipv4 and remote_ipv6 are a union). */
	bool over_ipv6 = ipv6 && *ipv6;
	if (over_ipv6) {
		key.remote_ipv6[0] = bpf_htonl(0xfd000000);
		key.remote_ipv6[3] = bpf_htonl(1);
	} else {
		key.remote_ipv4 = 0xc0000201;
	}
	if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), over_ipv6 ? BPF_F_TUNINFO_IPV6 : 0))
		return -1;
	return strait_overlay_ingress(skb);
}

SEC("tc")
int strait_transit6(struct __sk_buff *skb)
{
	return probe_record(skb, strait_transit6_ingress(skb));
}
