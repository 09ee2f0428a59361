/* Per-CPU counters: translated traffic per peer and family, and drops per reason (read by `strait inspect`). */
#pragma once

#include <stdbool.h>
#include <linux/pkt_cls.h>

#include "maps.h"

/* `counters`: the packet's family's map, strait_peer_counters (IPv4) or strait_peer_counters6 (IPv6). */
static __always_inline void strait_count_peer(void *counters, __u32 peer_id, __u32 bytes, bool tx)
{
	struct strait_peer_counters *c = bpf_map_lookup_elem(counters, &peer_id);
	if (!c) {
		struct strait_peer_counters zero = {};
		/* NOEXIST: another CPU may have created it meanwhile; then the lookup below finds that one. */
		bpf_map_update_elem(counters, &peer_id, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(counters, &peer_id);
		if (!c)
			return;
	}
	if (tx) {
		c->tx_packets++;
		c->tx_bytes += bytes;
	} else {
		c->rx_packets++;
		c->rx_bytes += bytes;
	}
}

/* Counts the drop and returns the verdict, so callers write `return strait_drop(REASON);`. */
static __always_inline int strait_drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&strait_drops, &reason);
	if (n)
		*n += 1;
	return TC_ACT_SHOT;
}
