// The node's datapath: strait_from_pod on each pod veth's TC ingress, strait_from_overlay on the VXLAN
// device's TC ingress (logic in lib/datapath.h).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "datapath.h"

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
