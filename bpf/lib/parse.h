/* Reads the headers the datapath decides on and rewrites. Parsing never writes. */
#pragma once

#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* <linux/icmp.h> pulls in glibc's <sys/socket.h>, which has no BPF-target variant: the few ICMP
 * definitions needed are spelled out here (RFC 792). */
struct strait_icmphdr {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	__be16 id; /* echo request/reply; unused in errors */
	__be16 sequence;
};
#define STRAIT_ICMP_ECHOREPLY 0
#define STRAIT_ICMP_DEST_UNREACH 3
#define STRAIT_ICMP_SOURCE_QUENCH 4
#define STRAIT_ICMP_REDIRECT 5
#define STRAIT_ICMP_ECHO 8
#define STRAIT_ICMP_TIME_EXCEEDED 11
#define STRAIT_ICMP_PARAMETERPROB 12

#define STRAIT_TCP_FIN 0x01
#define STRAIT_TCP_SYN 0x02
#define STRAIT_TCP_RST 0x04
#define STRAIT_TCP_ACK 0x10

#define STRAIT_IP_OFFSET_MASK 0x1fff
#define STRAIT_IP_DF 0x4000
#define STRAIT_IP_SADDR_OFF (ETH_HLEN + offsetof(struct iphdr, saddr))
#define STRAIT_IP_DADDR_OFF (ETH_HLEN + offsetof(struct iphdr, daddr))
#define STRAIT_IP_CSUM_OFF (ETH_HLEN + offsetof(struct iphdr, check))

enum strait_parse_result {
	STRAIT_PKT_OTHER = 0,     /* not IPv4, or too short to hold the addresses: never ours to touch */
	STRAIT_PKT_MALFORMED = 1, /* addresses readable, but a header we would rewrite is not valid */
	STRAIT_PKT_OK = 2,
	STRAIT_PKT_EXTHDRS = 3,   /* IPv6: extension headers we do not walk (parse6.h) */
};

/* The IP header quoted by an ICMP error, as far as the error carries it. */
struct strait_quote {
	__u32 ip;      /* offset of the quoted IP header */
	__u32 l4_csum; /* offset of the quoted TCP/UDP checksum; 0: not carried (truncated, fragment, other) */
	__u32 ports;   /* offset of the quoted TCP/UDP ports; 0: not carried */
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	bool udp;
};

struct strait_pkt {
	__be32 saddr;
	__be32 daddr;
	__u32 l4;      /* offset of the L4 header */
	__u32 l4_csum; /* offset of the L4 checksum; 0: none (later fragment, unknown protocol) */
	__u8 proto;
	__u8 tcp_flags;   /* TCP: the flags byte (FIN 0x01, SYN 0x02, RST 0x04, ..., ACK 0x10) */
	__u8 l4_hlen;     /* TCP: the header with its options (doff * 4); UDP: 8 */
	bool df;          /* IP: don't fragment */
	__u16 ip_len;     /* IP: total length */
	bool later_frag;  /* fragment offset > 0: no L4 header */
	bool pseudo;      /* the L4 checksum covers the addresses (TCP, UDP) */
	bool udp;         /* a zero checksum means "none" and must stay zero */
	bool udp_nocsum;  /* UDP with a zero checksum: nothing compensates a port change in skb->csum */
	bool icmp_echo;   /* sport/dport hold the identifier */
	bool icmp_error;  /* quote is valid */
	__be16 sport;     /* TCP/UDP ports; ICMP echo: the identifier in both */
	__be16 dport;
	struct strait_quote quote;
};

static __always_inline bool strait_icmp_is_error(__u8 type)
{
	return type == STRAIT_ICMP_DEST_UNREACH || type == STRAIT_ICMP_SOURCE_QUENCH || type == STRAIT_ICMP_REDIRECT ||
	       type == STRAIT_ICMP_TIME_EXCEEDED || type == STRAIT_ICMP_PARAMETERPROB;
}

/* Reads `len` bytes at `off`: straight from the skb's linear area when it holds them (the usual case,
 * and much cheaper than a helper call), through bpf_skb_load_bytes otherwise (non-linear skbs). The
 * offset is bounded for the verifier, which only tracks packet ranges below 64 KiB; headers are far
 * below 16 KiB. */
/* A ctx field read as one instruction at a constant offset: with several parses inlined in one program
 * the compiler may otherwise compute &skb->data_end once and read through it, which the verifier refuses
 * ("dereference of modified ctx ptr"). */
#define STRAIT_CTX_PTR(skb, field)                                                                          \
	({                                                                                                  \
		void *_p;                                                                                   \
		asm volatile("%0 = *(u32 *)(%1 + %2)" : "=r"(_p) : "r"(skb), "i"(offsetof(struct __sk_buff, field))); \
		_p;                                                                                         \
	})

static __always_inline int strait_load(struct __sk_buff *skb, __u32 off, void *to, const __u32 len)
{
	void *data = STRAIT_CTX_PTR(skb, data);
	void *end = STRAIT_CTX_PTR(skb, data_end);
	__u64 bounded = off & 0x3fff;
	void *from = data + bounded;
	if (bounded == off && from + len <= end) {
		__builtin_memcpy(to, from, len);
		return 0;
	}
	return bpf_skb_load_bytes(skb, off, to, len);
}

/* The quoted header starts 8 bytes into the ICMP error; it must be whole to be translated. */
static __always_inline int strait_parse_quote(struct __sk_buff *skb, struct strait_pkt *p, __u32 end)
{
	struct strait_quote *q = &p->quote;
	struct iphdr ip;
	q->ip = p->l4 + sizeof(struct strait_icmphdr);
	if (q->ip + sizeof(ip) > end || strait_load(skb, q->ip, &ip, sizeof(ip)))
		return STRAIT_PKT_MALFORMED;
	__u32 hl = ip.ihl * 4;
	if (ip.version != 4 || hl < sizeof(ip) || q->ip + hl > end)
		return STRAIT_PKT_MALFORMED;
	q->saddr = ip.saddr;
	q->daddr = ip.daddr;
	q->proto = ip.protocol;
	__u32 l4 = q->ip + hl;
	if (!(ip.frag_off & bpf_htons(STRAIT_IP_OFFSET_MASK))) {
		__be16 ports[2];
		if ((ip.protocol == IPPROTO_TCP || ip.protocol == IPPROTO_UDP) && l4 + sizeof(ports) <= end) {
			if (strait_load(skb, l4, ports, sizeof(ports)))
				return STRAIT_PKT_MALFORMED;
			q->ports = l4;
			q->sport = ports[0];
			q->dport = ports[1];
		}
		if (ip.protocol == IPPROTO_TCP && l4 + offsetof(struct tcphdr, check) + 2 <= end)
			q->l4_csum = l4 + offsetof(struct tcphdr, check);
		if (ip.protocol == IPPROTO_UDP && l4 + sizeof(struct udphdr) <= end) {
			q->l4_csum = l4 + offsetof(struct udphdr, check);
			q->udp = true;
		}
	}
	p->icmp_error = true;
	return STRAIT_PKT_OK;
}

static __always_inline int strait_parse_l4(struct __sk_buff *skb, struct strait_pkt *p, __u32 end)
{
	switch (p->proto) {
	case IPPROTO_TCP: {
		struct tcphdr tcp;
		if (p->l4 + sizeof(tcp) > end || strait_load(skb, p->l4, &tcp, sizeof(tcp)))
			return STRAIT_PKT_MALFORMED;
		p->sport = tcp.source;
		p->dport = tcp.dest;
		p->l4_csum = p->l4 + offsetof(struct tcphdr, check);
		p->pseudo = true;
		p->tcp_flags = ((__u8 *)&tcp)[13];
		p->l4_hlen = tcp.doff * 4;
		return STRAIT_PKT_OK;
	}
	case IPPROTO_UDP: {
		struct udphdr udp;
		if (p->l4 + sizeof(udp) > end || strait_load(skb, p->l4, &udp, sizeof(udp)))
			return STRAIT_PKT_MALFORMED;
		p->sport = udp.source;
		p->dport = udp.dest;
		p->l4_csum = p->l4 + offsetof(struct udphdr, check);
		p->pseudo = true;
		p->udp = true;
		p->udp_nocsum = udp.check == 0;
		p->l4_hlen = sizeof(udp);
		return STRAIT_PKT_OK;
	}
	case IPPROTO_ICMP: {
		struct strait_icmphdr icmp;
		if (p->l4 + sizeof(icmp) > end || strait_load(skb, p->l4, &icmp, sizeof(icmp)))
			return STRAIT_PKT_MALFORMED;
		p->l4_csum = p->l4 + offsetof(struct strait_icmphdr, checksum);
		if (icmp.type == STRAIT_ICMP_ECHO || icmp.type == STRAIT_ICMP_ECHOREPLY) {
			p->icmp_echo = true;
			p->sport = p->dport = icmp.id;
		}
		if (strait_icmp_is_error(icmp.type))
			return strait_parse_quote(skb, p, end);
		return STRAIT_PKT_OK;
	}
	default:
		return STRAIT_PKT_OK;
	}
}

/* Parses Ethernet + IPv4 + what follows; `end` is where the IP datagram ends (trailing padding excluded). */
static __always_inline int strait_parse(struct __sk_buff *skb, struct strait_pkt *p)
{
	__builtin_memset(p, 0, sizeof(*p));
	struct ethhdr eth;
	struct iphdr ip;
	if (strait_load(skb, 0, &eth, sizeof(eth)) || eth.h_proto != bpf_htons(ETH_P_IP))
		return STRAIT_PKT_OTHER;
	if (strait_load(skb, ETH_HLEN, &ip, sizeof(ip)))
		return STRAIT_PKT_OTHER;
	p->saddr = ip.saddr;
	p->daddr = ip.daddr;
	__u32 hl = ip.ihl * 4, tot = bpf_ntohs(ip.tot_len);
	if (ip.version != 4 || hl < sizeof(ip) || tot < hl || ETH_HLEN + tot > skb->len)
		return STRAIT_PKT_MALFORMED;
	p->proto = ip.protocol;
	p->l4 = ETH_HLEN + hl;
	p->ip_len = tot;
	p->df = (ip.frag_off & bpf_htons(STRAIT_IP_DF)) != 0;
	if (ip.frag_off & bpf_htons(STRAIT_IP_OFFSET_MASK)) {
		p->later_frag = true;
		return STRAIT_PKT_OK;
	}
	return strait_parse_l4(skb, p, ETH_HLEN + tot);
}
