/* The programs the datapath reaches by tail call (docs/datapath.md, "IPv6 hub transit"): a program of
 * their own gets a stack frame and a verifier budget of its own, where the entry programs have little of
 * either left. strait_progs is pinned, so its slots outlive the agent (an unpinned program array is
 * emptied when its last user reference goes, attached programs or not). Its slots are written by the
 * agent, not by libbpf at load (src/dataplane/ebpf/tail-calls.ts): a new build's programs go in with its
 * entry programs, after its maps are filled, so the running build never tail-calls into programs of
 * another build whose maps a layout change left empty. An empty slot: the tail call falls through, and
 * the caller drops and counts. */
#pragma once

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, STRAIT_PROG_MAX);
	__uint(key_size, sizeof(__u32));
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(value_size, sizeof(__u32));
} strait_progs SEC(".maps");
