// A program the verifier must reject (it reads the packet without a bounds check): the binding's test
// that a rejection raises an error carrying the verifier log.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int unchecked_read(struct __sk_buff *skb)
{
	return *(__u8 *)(long)skb->data;
}

char LICENSE[] SEC("license") = "GPL";
