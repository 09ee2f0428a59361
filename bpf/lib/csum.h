/* One's complement checksum arithmetic for fields the csum helpers cannot reach in one call (the header
 * quoted inside an ICMP error, whose changes also move the ICMP checksum). Values are taken as stored:
 * a one's complement sum does not depend on byte order. */
#pragma once

#include <linux/types.h>

static __always_inline __u16 strait_csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/* RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'). */
static __always_inline __u16 strait_csum_replace2(__u16 check, __u16 from, __u16 to)
{
	return (__u16)~strait_csum_fold((__u32)(__u16)~check + (__u16)~from + to);
}

static __always_inline __u16 strait_csum_replace4(__u16 check, __u32 from, __u32 to)
{
	check = strait_csum_replace2(check, (__u16)(from >> 16), (__u16)(to >> 16));
	return strait_csum_replace2(check, (__u16)from, (__u16)to);
}

/* What bpf_csum_diff gives for two adjacent 32-bit words `from` → `to` (an unfolded 32-bit sum of
 * ~from + to), without the helper call: the "diff" the csum_replace helpers take. */
static __always_inline __wsum strait_csum_diff8(__u32 from0, __u32 from1, __u32 to0, __u32 to1)
{
	__u64 sum = (__u64)(__u32)~from0 + (__u32)~from1 + to0 + to1;
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	return (__wsum)sum;
}

/* A checksum over data that changed by `diff` (a bpf_csum_diff of the old and new bytes). */
static __always_inline __u16 strait_csum_add_diff(__u16 check, __u32 diff)
{
	return (__u16)~strait_csum_fold((__u32)(__u16)~check + strait_csum_fold(diff));
}
