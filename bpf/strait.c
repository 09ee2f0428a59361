// The node's datapath: strait_from_pod on each pod veth's TC ingress, strait_from_overlay on the VXLAN
// device's TC ingress and strait_to_overlay on its egress (logic in lib/datapath.h), strait_liveness_reply on the ingress of each device
// holding the node's underlay or public address (lib/liveness.h); strait_transit6, IPv6 hub transit,
// reached from strait_from_overlay by tail call through strait_progs (lib/tail.h, lib/transit6.h).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "datapath.h"
#include "liveness.h"
#include "transit6.h"

char LICENSE[] SEC("license") = "GPL";

SEC("tc")
int strait_from_pod(struct __sk_buff *skb)
{
	return strait_pod_ingress(skb);
}

SEC("tc")
int strait_from_overlay(struct __sk_buff *skb)
{
	return strait_overlay_ingress(skb);
}

SEC("tc")
int strait_to_overlay(struct __sk_buff *skb)
{
	return strait_overlay_egress(skb);
}

SEC("tc")
int strait_liveness_reply(struct __sk_buff *skb)
{
	return strait_liveness_ingress(skb);
}

SEC("tc")
int strait_transit6(struct __sk_buff *skb)
{
	return strait_transit6_ingress(skb);
}
