// Types the datapath shares with TypeScript only on the wire (no map holds them), declared here so their
// BTF exists for the layout test (as Cilium's bpf_alignchecker.c does).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "common.h"

struct strait_probe strait_probe_layout;

char LICENSE[] SEC("license") = "GPL";
