/* Types shared by every Strait program and by the TypeScript side (src/datapath/layout.ts mirrors them;
 * a test compares both through BTF). Addresses are in network order, lengths and ids in host order. */
#pragma once

#include <linux/types.h>

/* An IPv4 network: the network address and its prefix length (0..32), or STRAIT_PREFIX_LEN_NONE. */
struct strait_cidr {
	__be32 addr;
	__u32 prefix_len;
};

/* No network: the prefix length of a network the home cluster or a peering does not have, in the maps
 * of a family it lacks (an IPv6-only home's strait_config, the strait_peers entry of a peering that
 * carries IPv6 only, the strait_config6 of a home without IPv6). Longer than any address, so nothing is
 * in it (strait_in, strait_in6), and the programs never translate into one (strait_has, strait_has6):
 * an address of 0 with a prefix length of 0 would be 0.0.0.0/0, every address. Its address is 0.
 * src/dataplane/ebpf/layout.ts mirrors it (PREFIX_LEN_NONE). */
#define STRAIT_PREFIX_LEN_NONE 255

/* An IPv6 address, network order. */
struct strait_in6 {
	__be32 addr[4];
};

#define STRAIT_F_GATEWAY (1u << 0)
/* A gateway candidate that is not the gateway this node sends through: it translates what arrives for a
 * peer or from one (a node or a peer whose probes chose it), but its own pods go through the gateway. */
#define STRAIT_F_STANDBY (1u << 1)

/* The node's settings; the one element (key 0) of an array map. All zero: not programmed yet. */
struct strait_config {
	struct strait_cidr pod_cidr;      /* the home cluster's PodCIDR */
	struct strait_cidr external_cidr; /* the home cluster's ExternalCIDR */
	__be32 node_addr;                 /* this node's underlay address */
	__be32 gateway_addr;              /* the active gateway's underlay address (a new gateway: one update) */
	__be32 transit_addr;              /* hub: the source given to transit traffic, in external_cidr */
	__u32 overlay_ifindex;            /* the node's VXLAN collect_md device */
	__u32 overlay_vni;                /* intra-cluster VNI */
	__u32 flags;                      /* STRAIT_F_* */
	__u8 overlay_mac[6];              /* MAC of every overlay device: inner frames are addressed to it */
	__u16 tunnel_mtu;                 /* largest inner IP packet a tunnel carries unfragmented; 0: unknown */
	/* An IPv6 underlay (node_addr and gateway_addr 0): the same two addresses in IPv6. A failover
	 * rewrites gateway_addr6 in place, four words: a packet in that instant may be sent to neither
	 * gateway, as one in flight to the old gateway is lost anyway. */
	struct strait_in6 node_addr6;
	struct strait_in6 gateway_addr6;
};

enum strait_prefix_kind {
	STRAIT_PREFIX_POD = 0,
	STRAIT_PREFIX_EXTERNAL = 1,
};

/* strait_routes: a remote prefix as seen in the home cluster (remotePodCIDR or remoteExternalCIDR). */
struct strait_route {
	__u32 peer_id;
	__u32 kind; /* enum strait_prefix_kind */
};

struct strait_lpm_v4_key {
	__u32 prefix_len;
	__be32 addr;
};

/* strait_peers: how a peer sees us, and how to reach its gateway. The VNI and the two MACs are the
 * peering's wire format (src/nodespec/peer-tunnel.ts), derived from both cluster ids and the same on the
 * kernel fallback, so an eBPF gateway and a fallback gateway accept each other's frames. 52 bytes,
 * 4-byte aligned: the MACs fill the middle exactly, no padding. */
struct strait_peer {
	struct strait_cidr local_nat_pod;      /* our PodCIDR in the peer's view */
	struct strait_cidr local_nat_external; /* our ExternalCIDR in the peer's view */
	__be32 endpoint;                       /* the peer gateway's tunnel address; 0: IPv6, endpoint6 */
	__u32 vni;                             /* VNI of the tunnel toward the peer (peeringVni) */
	__u8 dst_mac[6];                       /* inner destination: the peer's tunnel MAC toward us */
	__u8 src_mac[6];                       /* inner source: our tunnel MAC toward the peer */
	struct strait_in6 endpoint6;           /* the tunnel address of a peering over IPv6 (appended) */
};

/* strait_nodes: which node hosts a pod prefix (symmetric routing on the gateway), at which underlay
 * address: `underlay`, or where it is 0 (an IPv6 underlay) `underlay6`. */
struct strait_node {
	__be32 underlay;
	__u32 _pad;
	struct strait_in6 underlay6;
};

/* IPv6: separate maps of their own (lib/maps.h), so the IPv4 path and its structs stay as they are. The
 * tunnel toward a peer (endpoint, VNI, MACs) is the peering's, shared by both families: strait_peers. */

/* An IPv6 network: the network address and its prefix length (0..128), or STRAIT_PREFIX_LEN_NONE. */
struct strait_cidr6 {
	struct strait_in6 addr;
	__u32 prefix_len;
};

/* strait_config6, the one element of an array map: the home cluster's IPv6 networks. The node has no
 * IPv6 family when its PodCIDR is STRAIT_PREFIX_LEN_NONE (what the agent writes then) or all is zero
 * (never written: an IPv6 PodCIDR is never /0). */
struct strait_config6 {
	struct strait_cidr6 pod_cidr;
	struct strait_cidr6 external_cidr;
	struct strait_in6 transit_addr;
};

struct strait_lpm_v6_key {
	__u32 prefix_len;
	struct strait_in6 addr;
};

/* strait_peers6: how a peer sees our IPv6 networks. */
struct strait_peer6 {
	struct strait_cidr6 local_nat_pod;
	struct strait_cidr6 local_nat_external;
};

struct strait_peer_counters {
	__u64 tx_packets; /* translated toward the peer */
	__u64 tx_bytes;
	__u64 rx_packets; /* translated from the peer */
	__u64 rx_bytes;
};

/* Why a packet was dropped; strait_drops counts them per CPU. Keep in step with src/datapath/layout.ts. */
enum strait_drop_reason {
	STRAIT_DROP_MALFORMED = 0,      /* a header we must rewrite is truncated or invalid */
	STRAIT_DROP_NO_PEER = 1,        /* a route names a peer that is not (yet) programmed, or not in the packet's family */
	STRAIT_DROP_NOT_OURS = 2,       /* from a peer, to an address outside both of our views */
	STRAIT_DROP_NO_NATMAPPING = 3,  /* to an ExternalCIDR address that maps to nothing */
	STRAIT_DROP_TRANSIT_STATE = 4,  /* transit: no port free, unknown reply, or an untranslatable protocol */
	STRAIT_DROP_NO_CONFIG = 5,      /* the node is not programmed yet */
	STRAIT_DROP_CSUM = 6,           /* a checksum helper failed */
	STRAIT_DROP_TUNNEL = 7,         /* setting the tunnel key or redirecting failed */
	STRAIT_DROP_EXTHDRS = 8,        /* IPv6: extension headers we do not walk (too many, or a live routing header) */
	STRAIT_DROP_TRANSIT6 = 9,       /* IPv6: hub transit, but its program (strait_progs) is missing */
	STRAIT_DROP_TOO_BIG = 10,       /* a later IPv4 fragment over the tunnel MTU of an IPv6 underlay (its first is answered) */
	STRAIT_DROP_MAX = 11,
};

/* strait_snat (LRU): transit flows on the hub, one entry per direction. */
struct strait_flow_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport; /* ICMP echo: the identifier */
	__be16 dport; /* ICMP echo: the identifier */
	__u8 proto;
	__u8 _pad[3];
};

struct strait_snat_entry {
	__be32 addr; /* forward: unused (the transit address); reverse: the original source */
	__be16 port; /* forward: the allocated port; reverse: the original source port */
	__u16 flags; /* reverse: STRAIT_SNAT_* (how far a TCP flow has closed); forward: 0 */
	__u32 _pad;
	__u64 closed_ns; /* reverse: when the flow closed (bpf_ktime_get_ns); forward: 0 */
};

/* strait_snat6 (LRU): IPv6 transit flows on the hub, as strait_snat. After the addresses, both families'
 * keys and entries have the same fields at the same offsets (lib/snat.h works on either). */
struct strait_flow6_key {
	struct strait_in6 saddr;
	struct strait_in6 daddr;
	__be16 sport; /* ICMPv6 echo: the identifier */
	__be16 dport; /* ICMPv6 echo: the identifier */
	__u8 proto;
	__u8 _pad[3];
};

struct strait_snat6_entry {
	struct strait_in6 addr; /* forward: the transit address; reverse: the original source */
	__be16 port;
	__u16 flags;
	__u32 _pad;
	__u64 closed_ns;
};

/* strait_progs: the programs the datapath tail-calls, by slot. */
enum strait_prog_slot {
	STRAIT_PROG_TRANSIT6 = 0, /* strait_transit6: IPv6 hub transit (lib/transit6.h) */
	STRAIT_PROG_MAX = 1,
};

/* A TCP transit flow's close, seen on its reverse entry: a second after both FINs or a RST passed (the
 * last ACK and any retransmitted FIN have crossed), its port may go to a new flow, as conntrack reuses a
 * tuple in TIME_WAIT; so ports do not run out while closed flows wait for the LRU to evict them. */
#define STRAIT_SNAT_REUSE_AFTER_NS 1000000000ull
#define STRAIT_SNAT_FIN_FORWARD (1u << 0)
#define STRAIT_SNAT_FIN_REPLY (1u << 1)
#define STRAIT_SNAT_RST (1u << 2)

/* strait_liveness: what the node's probe responder (lib/liveness.h) answers with. All zero: it answers
 * nothing. Written by the agent after each apply. */
struct strait_liveness {
	__be32 addrs[2];  /* the addresses probes are answered on: the underlay's, the public one (or 0) */
	__u32 generation; /* the agent's apply count since its datapath was loaded; a restart starts again */
	__u16 port;       /* the UDP port probes go to; 0: not answering */
	__u8 state;       /* enum strait_probe_state */
	__u8 _pad;
	struct strait_in6 addrs6[2]; /* the same on an IPv6 underlay (or all zero; appended) */
};

enum strait_probe_state {
	STRAIT_PROBE_DOWN = 0,  /* programs run, maps hold no spec the node forwards by */
	STRAIT_PROBE_READY = 1, /* forwarding by its last applied spec */
};

/* A probe's UDP payload, both ways (network order; docs/liveness.md, "Wire format"). */
#define STRAIT_PROBE_MAGIC 0x5354524cu /* "STRL" */
#define STRAIT_PROBE_VERSION 1
#define STRAIT_PROBE_REQUEST 1
#define STRAIT_PROBE_REPLY 2
#define STRAIT_PROBE_TTL 64

struct strait_probe {
	__be32 magic;
	__u8 version;
	__u8 type;  /* STRAIT_PROBE_REQUEST, STRAIT_PROBE_REPLY */
	__u8 state; /* reply: enum strait_probe_state */
	__u8 _pad;
	__be32 session;    /* the prober's, echoed: tells its replies from another's */
	__be32 seq;        /* the prober's, echoed */
	__be32 generation; /* reply: strait_liveness.generation */
};
