/* The programs the datapath reaches by tail call (docs/datapath.md, "IPv6 hub transit"): a program of
 * their own gets a stack frame and a verifier budget of its own, where the entry programs have little of
 * either left. strait_progs is pinned, so its slots outlive the agent (an unpinned program array is
 * emptied when its last user reference goes, attached programs or not); libbpf fills them at each load
 * from the static initialisation below, so a new build's load puts its own programs in before it swaps
 * the entry programs. An empty slot: the tail call falls through, and the caller drops and counts. */
#pragma once

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "common.h"

/* Defined by each object that includes this header: bpf/strait.c (test/bpf/tunnel_probe.c wraps it). */
int strait_transit6(struct __sk_buff *skb);

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, STRAIT_PROG_MAX);
	__uint(key_size, sizeof(__u32));
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, int(struct __sk_buff *)); /* last: a flexible array */
} strait_progs SEC(".maps") = {
	.values = { [STRAIT_PROG_TRANSIT6] = (void *)&strait_transit6 },
};
