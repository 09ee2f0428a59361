/* The datapath's maps (docs/datapath.md, "Maps"), pinned by name so the agent reprograms them in place
 * and a program swap keeps their contents. Sizes are defaults the loader may change with setMaxEntries. */
#pragma once

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "common.h"

/* An array: the verifier inlines the lookup of its one element, which always exists (zeroed until the
 * agent writes it). An update copies in place rather than swapping, so a packet meanwhile may see some
 * fields old and some new; in operation only the active gateway changes, one aligned word. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct strait_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct strait_lpm_v4_key);
	__type(value, struct strait_route);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct strait_peer);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_peers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 131072);
	__type(key, __be32);
	__type(value, __be32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_natmap SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 131072);
	__type(key, __be32);
	__type(value, __be32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_natmap_rev SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct strait_lpm_v4_key);
	__type(value, struct strait_node);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_nodes SEC(".maps");

/* IPv6 (common.h): the same roles as the maps above, keyed by 128-bit addresses. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct strait_config6);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_config6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct strait_lpm_v6_key);
	__type(value, struct strait_route);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_routes6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct strait_peer6);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_peers6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 131072);
	__type(key, struct strait_in6);
	__type(value, struct strait_in6);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_natmap6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 131072);
	__type(key, struct strait_in6);
	__type(value, struct strait_in6);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_natmap6_rev SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct strait_lpm_v6_key);
	__type(value, struct strait_node);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_nodes6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct strait_flow_key);
	__type(value, struct strait_snat_entry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_snat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct strait_flow6_key);
	__type(value, struct strait_snat6_entry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_snat6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct strait_peer_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_peer_counters SEC(".maps");

/* IPv6's, apart so a dual-stack peering's families are told apart and strait_peer_counters keeps the
 * layout older builds pinned (an upgrade reuses it rather than set it aside). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct strait_peer_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_peer_counters6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STRAIT_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} strait_drops SEC(".maps");

/* The node's config, or NULL while the agent has not written it: the element is then all zero, and a
 * programmed node always names its overlay device (an ifindex is never 0). */
static __always_inline const struct strait_config *strait_config_get(void)
{
	__u32 zero = 0;
	const struct strait_config *cfg = bpf_map_lookup_elem(&strait_config, &zero);
	return cfg && cfg->overlay_ifindex ? cfg : 0;
}

/* The longest route in `map` (strait_routes or strait_nodes) covering `addr`. */
static __always_inline void *strait_lpm(void *map, __be32 addr)
{
	struct strait_lpm_v4_key key = { .prefix_len = 32, .addr = addr };
	return bpf_map_lookup_elem(map, &key);
}

/* The node's IPv6 networks, or NULL when it has none: a PodCIDR of STRAIT_PREFIX_LEN_NONE, or the element
 * all zero (never written). */
static __always_inline const struct strait_config6 *strait_config6_get(void)
{
	__u32 zero = 0;
	const struct strait_config6 *cfg6 = bpf_map_lookup_elem(&strait_config6, &zero);
	return cfg6 && cfg6->pod_cidr.prefix_len && cfg6->pod_cidr.prefix_len <= 128 ? cfg6 : 0;
}

/* The longest route in `map` (strait_routes6 or strait_nodes6) covering `addr`. */
static __always_inline void *strait_lpm6(void *map, const struct strait_in6 *addr)
{
	struct strait_lpm_v6_key key = { .prefix_len = 128, .addr = *addr };
	return bpf_map_lookup_elem(map, &key);
}
