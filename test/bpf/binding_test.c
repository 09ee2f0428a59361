// The binding's test object: one map of each kind the binding supports, load-time settings, and a TC
// program whose behaviour depends on both, so a test can tell whether each binding call really worked.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "binding_test.h"

// Load-time settings (const volatile: the verifier sees them as constants).
const volatile __u32 test_retval = TC_ACT_OK;
const volatile __u8 test_marker = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct test_flow_key);
	__type(value, struct test_flow_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} test_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} test_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct test_counter);
} test_counters SEC(".maps");

struct test_lpm_key {
	__u32 prefixlen;
	__be32 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct test_lpm_key);
	__type(value, __u32);
} test_routes SEC(".maps");

struct test_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
};

struct test_inner test_inner_a SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct test_inner);
} test_outer SEC(".maps") = {
	.values = { [0] = &test_inner_a },
};

// Counts the packet per CPU, writes test_marker into the first byte, and returns
// test_retval + (value in the outer map's current inner map at index 0).
SEC("tc")
int test_prog(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct test_counter *c = bpf_map_lookup_elem(&test_counters, &zero);
	if (c) {
		c->packets++;
		c->bytes += skb->len;
	}
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	if (data + 1 <= end && test_marker)
		*(__u8 *)data = test_marker;
	__u32 extra = 0;
	void *inner = bpf_map_lookup_elem(&test_outer, &zero);
	if (inner) {
		__u32 *v = bpf_map_lookup_elem(inner, &zero);
		if (v)
			extra = *v;
	}
	return test_retval + extra;
}

char LICENSE[] SEC("license") = "GPL";
