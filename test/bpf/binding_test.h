// Structs shared with the binding tests' TypeScript codecs (test/binding/layout.ts); a test compares
// both layouts through BTF.
#pragma once
#include <linux/types.h>

struct test_flow_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 _pad[3];
};

struct test_flow_value {
	__u64 packets;
	__u32 flags;
	__u8 mac[6];
};

struct test_counter {
	__u64 packets;
	__u64 bytes;
};
