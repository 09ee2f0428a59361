// rtnetlink through libmnl: the dumps and changes the kernel-state reconcilers need (IPv4 routes of one
// table, IPv4 policy rules, the neighbours and the FDB entries of one device). Every call opens its own
// socket in the namespace it is given (a socket keeps the namespace it was created in) and closes it
// before returning. A change call sends all its messages (in chunks the socket buffers hold), then
// collects each ACK by sequence number: one result per change, so a failed one stops nothing else.
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <ctime>
#include <exception>
#include <functional>
#include <memory>
#include <tuple>
#include <vector>

#include "addon.h"
#include "netlink.h"

namespace strait {
namespace {

std::string FormatAddress(int family, const void* bytes) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, bytes, text, sizeof(text));
  return text;
}

std::string FormatMac(const uint8_t* mac) {
  char text[18];
  snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
  return text;
}

std::string IfName(uint32_t index) {
  char name[IF_NAMESIZE] = {};
  return if_indextoname(index, name) ? name : "if" + std::to_string(index);
}

void Dump(Napi::Env env, const char* operation, const std::function<void(nlmsghdr*)>& build,
          const std::function<void(const nlmsghdr*)>& each) {
  NetlinkDump(env, NETLINK_ROUTE, operation, build, each);
}

// ---- decoding ----

struct Attrs {
  const nlattr* tb[64] = {};
};

Attrs ParseAttrs(const nlmsghdr* nlh, size_t header) {
  Attrs a;
  mnl_attr_parse(nlh, header, [](const nlattr* attr, void* data) -> int {
    uint16_t type = mnl_attr_get_type(attr);
    if (type < 64) static_cast<Attrs*>(data)->tb[type] = attr;
    return MNL_CB_OK;
  }, &a);
  return a;
}

std::string Prefix(int family, const nlattr* addr, unsigned length) {
  if (addr == nullptr) return family == AF_INET6 ? "::/0" : "0.0.0.0/0";
  return FormatAddress(family, mnl_attr_get_payload(addr)) + "/" + std::to_string(length);
}

// The address family of a dump: argument `index` is 6 for IPv6, else (absent, 4) IPv4.
int ArgFamily(const Napi::CallbackInfo& info, size_t index) {
  return !IsAbsent(info[index]) && ArgU32(info, index, "family") == 6 ? AF_INET6 : AF_INET;
}

// routeDump(netns, table, family?) -> [{ dst, type, protocol, table, metric, onlink, dev?, gateway? }]:
// the IPv4 (or, family 6, IPv6) routes of one table (by number; a table with no routes yet is empty).
Napi::Value RouteDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  uint32_t table = ArgU32(info, 1, "table");
  int family = ArgFamily(info, 2);
  NetnsGuard guard(env, netns);
  Napi::Array out = Napi::Array::New(env);
  uint32_t count = 0;
  // A table can hold 100,000 routes: the property names are made once, not once per route.
  Napi::String kDst = Napi::String::New(env, "dst"), kType = Napi::String::New(env, "type"),
               kProtocol = Napi::String::New(env, "protocol"), kTable = Napi::String::New(env, "table"),
               kMetric = Napi::String::New(env, "metric"), kOnlink = Napi::String::New(env, "onlink"),
               kDev = Napi::String::New(env, "dev"), kGateway = Napi::String::New(env, "gateway");
  std::vector<std::string> names;  // by ifindex: one if_indextoname per device, not per route
  auto name = [&](uint32_t index) -> const std::string& {
    if (index >= names.size()) names.resize(index + 1);
    if (names[index].empty()) names[index] = IfName(index);
    return names[index];
  };
  Dump(env, "dump routes", [family](nlmsghdr* req) {
    req->nlmsg_type = RTM_GETROUTE;
    auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(req, sizeof(rtmsg)));
    rtm->rtm_family = family;
  }, [&](const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != RTM_NEWROUTE) return;
    auto* rtm = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(nlh));
    if (rtm->rtm_family != family || (rtm->rtm_flags & RTM_F_CLONED)) return;
    Attrs a = ParseAttrs(nlh, sizeof(rtmsg));
    uint32_t t = a.tb[RTA_TABLE] ? mnl_attr_get_u32(a.tb[RTA_TABLE]) : rtm->rtm_table;
    if (t != table) return;
    Napi::Object r = Napi::Object::New(env);
    r.Set(kDst, Prefix(family, a.tb[RTA_DST], rtm->rtm_dst_len));
    r.Set(kType, Napi::Number::New(env, rtm->rtm_type));
    r.Set(kProtocol, Napi::Number::New(env, rtm->rtm_protocol));
    r.Set(kTable, Napi::Number::New(env, t));
    r.Set(kMetric, Napi::Number::New(env, a.tb[RTA_PRIORITY] ? mnl_attr_get_u32(a.tb[RTA_PRIORITY]) : 0));
    r.Set(kOnlink, Napi::Boolean::New(env, (rtm->rtm_flags & RTNH_F_ONLINK) != 0));
    if (a.tb[RTA_OIF]) r.Set(kDev, name(mnl_attr_get_u32(a.tb[RTA_OIF])));
    if (a.tb[RTA_GATEWAY]) r.Set(kGateway, FormatAddress(family, mnl_attr_get_payload(a.tb[RTA_GATEWAY])));
    // An IPv4 route through an IPv6 next hop (RFC 5549): the gateway's own family is in the attribute.
    if (a.tb[RTA_VIA] && mnl_attr_get_payload_len(a.tb[RTA_VIA]) == sizeof(rtvia) + 16) {
      auto* via = static_cast<const rtvia*>(mnl_attr_get_payload(a.tb[RTA_VIA]));
      if (via->rtvia_family == AF_INET6) r.Set(kGateway, FormatAddress(AF_INET6, via->rtvia_addr));
    }
    out[count++] = r;
  });
  return out;
}

// ruleDump(netns, family?) -> [{ priority, table, action, flags, tos, src?, dst?, iif?, oif?, fwmark?,
// fwmask?, other }]: the IPv4 (or, family 6, IPv6) rules; `other` lists the attribute types of selectors
// not decoded here.
Napi::Value RuleDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  int family = ArgFamily(info, 1);
  NetnsGuard guard(env, netns);
  Napi::Array out = Napi::Array::New(env);
  uint32_t count = 0;
  Dump(env, "dump rules", [family](nlmsghdr* req) {
    req->nlmsg_type = RTM_GETRULE;
    auto* frh = static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(req, sizeof(fib_rule_hdr)));
    frh->family = family;
  }, [&](const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != RTM_NEWRULE) return;
    auto* frh = static_cast<const fib_rule_hdr*>(mnl_nlmsg_get_payload(nlh));
    if (frh->family != family) return;
    Attrs a = ParseAttrs(nlh, sizeof(fib_rule_hdr));
    Napi::Object r = Napi::Object::New(env);
    r.Set("priority", a.tb[FRA_PRIORITY] ? mnl_attr_get_u32(a.tb[FRA_PRIORITY]) : 0);
    r.Set("table", a.tb[FRA_TABLE] ? mnl_attr_get_u32(a.tb[FRA_TABLE]) : frh->table);
    r.Set("action", frh->action);
    r.Set("flags", frh->flags);
    r.Set("tos", frh->tos);
    if (a.tb[FRA_SRC]) r.Set("src", Prefix(family, a.tb[FRA_SRC], frh->src_len));
    if (a.tb[FRA_DST]) r.Set("dst", Prefix(family, a.tb[FRA_DST], frh->dst_len));
    if (a.tb[FRA_IIFNAME]) r.Set("iif", mnl_attr_get_str(a.tb[FRA_IIFNAME]));
    if (a.tb[FRA_OIFNAME]) r.Set("oif", mnl_attr_get_str(a.tb[FRA_OIFNAME]));
    if (a.tb[FRA_FWMARK]) r.Set("fwmark", mnl_attr_get_u32(a.tb[FRA_FWMARK]));
    if (a.tb[FRA_FWMASK]) r.Set("fwmask", mnl_attr_get_u32(a.tb[FRA_FWMASK]));
    Napi::Array other = Napi::Array::New(env);
    uint32_t n = 0;
    for (int type = 1; type < 64; type++) {
      if (!a.tb[type]) continue;
      switch (type) {
        case FRA_PRIORITY: case FRA_TABLE: case FRA_SRC: case FRA_DST: case FRA_IIFNAME: case FRA_OIFNAME:
        case FRA_FWMARK: case FRA_FWMASK: case FRA_PROTOCOL:
          continue;
        case FRA_SUPPRESS_PREFIXLEN:  // always present; -1 means unset
          if (mnl_attr_get_u32(a.tb[type]) == 0xffffffffu) continue;
          break;
      }
      other[n++] = type;
    }
    r.Set("other", other);
    out[count++] = r;
  });
  return out;
}

// neighbourDump(netns, dev, bridge) -> [{ address?, lladdr?, state, flags }]: the IP neighbours of a
// device, or with `bridge` its FDB entries (`address` then is the remote of a VXLAN entry).
Napi::Value NeighbourDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  std::string dev = ArgString(info, 1, "dev");
  bool bridge = info[2].ToBoolean();
  NetnsGuard guard(env, netns);
  unsigned ifindex = if_nametoindex(dev.c_str());
  if (ifindex == 0) ThrowNativeError(env, NativeErrorKind::kNetlink, "find interface", errno, dev + (netns.empty() ? "" : " in " + netns));
  Napi::Array out = Napi::Array::New(env);
  uint32_t count = 0;
  Dump(env, bridge ? "dump fdb" : "dump neighbours", [&](nlmsghdr* req) {
    req->nlmsg_type = RTM_GETNEIGH;
    auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(req, sizeof(ndmsg)));
    ndm->ndm_family = bridge ? AF_BRIDGE : AF_UNSPEC;
  }, [&](const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != RTM_NEWNEIGH) return;
    auto* ndm = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(nlh));
    if (static_cast<unsigned>(ndm->ndm_ifindex) != ifindex) return;
    if (bridge ? ndm->ndm_family != AF_BRIDGE : (ndm->ndm_family != AF_INET && ndm->ndm_family != AF_INET6)) return;
    Attrs a = ParseAttrs(nlh, sizeof(ndmsg));
    Napi::Object e = Napi::Object::New(env);
    if (a.tb[NDA_DST]) {
      uint16_t len = mnl_attr_get_payload_len(a.tb[NDA_DST]);
      int family = len == 16 ? AF_INET6 : AF_INET;
      e.Set("address", FormatAddress(family, mnl_attr_get_payload(a.tb[NDA_DST])));
    }
    if (a.tb[NDA_LLADDR] && mnl_attr_get_payload_len(a.tb[NDA_LLADDR]) == 6)
      e.Set("lladdr", FormatMac(static_cast<const uint8_t*>(mnl_attr_get_payload(a.tb[NDA_LLADDR]))));
    e.Set("state", ndm->ndm_state);
    e.Set("flags", ndm->ndm_flags);
    out[count++] = e;
  });
  return out;
}

// Attributes nested in `attr` (IFLA_LINKINFO, IFLA_INFO_DATA).
Attrs ParseNested(const nlattr* attr) {
  Attrs a;
  mnl_attr_parse_nested(attr, [](const nlattr* inner, void* data) -> int {
    uint16_t type = mnl_attr_get_type(inner);
    if (type < 64) static_cast<Attrs*>(data)->tb[type] = inner;
    return MNL_CB_OK;
  }, &a);
  return a;
}

// linkDump(netns) -> [{ ifname, up, mtu, address?, kind?, vxlan?: { id, port, local?, remote?, learning,
// external }, xfrmIfId? }]: the links of a namespace, with what the tunnel reconciler compares.
Napi::Value LinkDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  NetnsGuard guard(env, netns);
  Napi::Array out = Napi::Array::New(env);
  uint32_t count = 0;
  Dump(env, "dump links", [](nlmsghdr* req) {
    req->nlmsg_type = RTM_GETLINK;
    auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(req, sizeof(ifinfomsg)));
    ifi->ifi_family = AF_UNSPEC;
  }, [&](const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != RTM_NEWLINK) return;
    auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
    Attrs a = ParseAttrs(nlh, sizeof(ifinfomsg));
    if (!a.tb[IFLA_IFNAME]) return;
    Napi::Object l = Napi::Object::New(env);
    l.Set("ifname", mnl_attr_get_str(a.tb[IFLA_IFNAME]));
    l.Set("up", (ifi->ifi_flags & IFF_UP) != 0);
    l.Set("noarp", (ifi->ifi_flags & IFF_NOARP) != 0);
    l.Set("mtu", a.tb[IFLA_MTU] ? mnl_attr_get_u32(a.tb[IFLA_MTU]) : 0);
    if (a.tb[IFLA_ADDRESS] && mnl_attr_get_payload_len(a.tb[IFLA_ADDRESS]) == 6)
      l.Set("address", FormatMac(static_cast<const uint8_t*>(mnl_attr_get_payload(a.tb[IFLA_ADDRESS]))));
    if (a.tb[IFLA_LINKINFO]) {
      Attrs li = ParseNested(a.tb[IFLA_LINKINFO]);
      std::string kind = li.tb[IFLA_INFO_KIND] ? mnl_attr_get_str(li.tb[IFLA_INFO_KIND]) : "";
      if (!kind.empty()) l.Set("kind", kind);
      if (li.tb[IFLA_INFO_DATA] && kind == "vxlan") {
        Attrs d = ParseNested(li.tb[IFLA_INFO_DATA]);
        Napi::Object v = Napi::Object::New(env);
        v.Set("id", d.tb[IFLA_VXLAN_ID] ? mnl_attr_get_u32(d.tb[IFLA_VXLAN_ID]) : 0);
        v.Set("port", d.tb[IFLA_VXLAN_PORT] ? ntohs(mnl_attr_get_u16(d.tb[IFLA_VXLAN_PORT])) : 0);
        if (d.tb[IFLA_VXLAN_LOCAL]) v.Set("local", FormatAddress(AF_INET, mnl_attr_get_payload(d.tb[IFLA_VXLAN_LOCAL])));
        if (d.tb[IFLA_VXLAN_GROUP]) v.Set("remote", FormatAddress(AF_INET, mnl_attr_get_payload(d.tb[IFLA_VXLAN_GROUP])));
        if (d.tb[IFLA_VXLAN_LOCAL6]) v.Set("local", FormatAddress(AF_INET6, mnl_attr_get_payload(d.tb[IFLA_VXLAN_LOCAL6])));
        if (d.tb[IFLA_VXLAN_GROUP6]) v.Set("remote", FormatAddress(AF_INET6, mnl_attr_get_payload(d.tb[IFLA_VXLAN_GROUP6])));
        v.Set("learning", d.tb[IFLA_VXLAN_LEARNING] && mnl_attr_get_u8(d.tb[IFLA_VXLAN_LEARNING]) != 0);
        v.Set("external", d.tb[IFLA_VXLAN_COLLECT_METADATA] && mnl_attr_get_u8(d.tb[IFLA_VXLAN_COLLECT_METADATA]) != 0);
        l.Set("vxlan", v);
      }
      if (li.tb[IFLA_INFO_DATA] && kind == "xfrm") {
        Attrs d = ParseNested(li.tb[IFLA_INFO_DATA]);
        l.Set("xfrmIfId", d.tb[IFLA_XFRM_IF_ID] ? mnl_attr_get_u32(d.tb[IFLA_XFRM_IF_ID]) : 0);
      }
    }
    out[count++] = l;
  });
  return out;
}

// addressDump(netns) -> [{ dev, address }]: every IPv4 and IPv6 address of the namespace, by device (the
// local address, as `ip addr` shows it: IFA_LOCAL, else IFA_ADDRESS).
Napi::Value AddressDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  NetnsGuard guard(env, netns);
  Napi::Array out = Napi::Array::New(env);
  uint32_t count = 0;
  Dump(env, "dump addresses", [](nlmsghdr* req) {
    req->nlmsg_type = RTM_GETADDR;
    auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(req, sizeof(ifaddrmsg)));
    ifa->ifa_family = AF_UNSPEC;
  }, [&](const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != RTM_NEWADDR) return;
    auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(nlh));
    if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) return;
    Attrs a = ParseAttrs(nlh, sizeof(ifaddrmsg));
    const nlattr* local = a.tb[IFA_LOCAL] ? a.tb[IFA_LOCAL] : a.tb[IFA_ADDRESS];
    if (!local) return;
    Napi::Object e = Napi::Object::New(env);
    e.Set("dev", IfName(ifa->ifa_index));
    e.Set("address", FormatAddress(ifa->ifa_family, mnl_attr_get_payload(local)));
    out[count++] = e;
  });
  return out;
}

// ---- changes ----

bool Has(const Napi::Object& o, const char* key) { return !IsAbsent(o.Get(key)); }

bool ParseMac(const std::string& text, uint8_t mac[6]) {
  unsigned b[6];
  if (sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6) return false;
  for (int i = 0; i < 6; i++) mac[i] = static_cast<uint8_t>(b[i]);
  return true;
}

// Resolves a device name in the current namespace, or marks the change as failed.
unsigned Device(NetlinkChange& p, const std::string& dev) {
  unsigned index = if_nametoindex(dev.c_str());
  if (index == 0) {
    p.err = errno != 0 ? errno : ENODEV;
    p.detail = "dev " + dev;
  }
  return index;
}

// { kind: 'route', op: 'add'|'replace'|'del', dst, table, protocol?, metric?, type?: 'unreachable',
//   dev?, via?, onlink? }
void BuildRoute(const Napi::Object& c, const std::string& op, NetlinkChange& p) {
  std::string dst = Str(c, "dst");
  p.operation = "route " + op + " " + dst;
  Address d;
  if (!ParseAddress(dst, true, d)) return Refuse(p, "dst " + dst + " is not a network");
  bool del = op == "del";
  uint16_t flags = op == "add" ? NLM_F_CREATE | NLM_F_EXCL : op == "replace" ? NLM_F_CREATE | NLM_F_REPLACE : 0;
  if (!del && op != "add" && op != "replace") return Refuse(p, "unknown operation");
  nlmsghdr* nlh = Header(p, del ? RTM_DELROUTE : RTM_NEWROUTE, flags);
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  uint32_t table = U32(c, "table", RT_TABLE_MAIN);
  rtm->rtm_family = d.family;
  rtm->rtm_dst_len = d.length;
  rtm->rtm_table = table < 256 ? table : RT_TABLE_UNSPEC;
  rtm->rtm_protocol = U32(c, "protocol", del ? RTPROT_UNSPEC : RTPROT_BOOT);
  bool unreachable = Has(c, "type") && Str(c, "type") == "unreachable";
  if (Has(c, "type") && !unreachable) return Refuse(p, "type " + Str(c, "type"));
  // As iproute2: a delete matches any scope and type; a route without a gateway is on-link (scope link).
  rtm->rtm_type = del ? RTN_UNSPEC : unreachable ? RTN_UNREACHABLE : RTN_UNICAST;
  rtm->rtm_scope = del ? RT_SCOPE_NOWHERE : (!unreachable && !Has(c, "via")) ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  if (c.Get("onlink").ToBoolean()) rtm->rtm_flags |= RTNH_F_ONLINK;
  if (d.length > 0) mnl_attr_put(nlh, RTA_DST, d.size(), d.bytes);
  mnl_attr_put_u32(nlh, RTA_TABLE, table);
  mnl_attr_put_u32(nlh, RTA_PRIORITY, U32(c, "metric", 0));
  if (Has(c, "via")) {
    Address via;
    if (!ParseAddress(Str(c, "via"), false, via)) return Refuse(p, "via " + Str(c, "via"));
    if (via.family == d.family) {
      mnl_attr_put(nlh, RTA_GATEWAY, via.size(), via.bytes);
    } else if (d.family == AF_INET) {
      // An IPv6 next hop for an IPv4 route (RFC 5549, `ip route ... via inet6`): RTA_VIA names its family.
      uint8_t buf[sizeof(rtvia) + 16];
      auto* rv = reinterpret_cast<rtvia*>(buf);
      rv->rtvia_family = AF_INET6;
      memcpy(rv->rtvia_addr, via.bytes, 16);
      mnl_attr_put(nlh, RTA_VIA, sizeof(buf), buf);
    } else {
      return Refuse(p, "via " + Str(c, "via") + " (an IPv6 route takes no IPv4 next hop)");
    }
  }
  if (Has(c, "dev")) {
    unsigned index = Device(p, Str(c, "dev"));
    if (index == 0) return;
    mnl_attr_put_u32(nlh, RTA_OIF, index);
  }
}

// { kind: 'rule', op: 'add'|'del', family?: 4|6, priority, table?, src?, dst?, iif?, fwmark?, fwmask? }
void BuildRule(const Napi::Object& c, const std::string& op, NetlinkChange& p) {
  uint32_t priority = U32(c, "priority", 0);
  p.operation = "rule " + op + " priority " + std::to_string(priority);
  bool del = op == "del";
  if (!del && op != "add") return Refuse(p, "unknown operation");
  nlmsghdr* nlh = Header(p, del ? RTM_DELRULE : RTM_NEWRULE, del ? 0 : NLM_F_CREATE | NLM_F_EXCL);
  auto* frh = static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(fib_rule_hdr)));
  int family = U32(c, "family", 4) == 6 ? AF_INET6 : AF_INET;
  frh->family = family;
  uint32_t table = U32(c, "table", 0);
  // A delete without a table (0) matches any table and action, as iproute2's.
  frh->action = del ? FR_ACT_UNSPEC : FR_ACT_TO_TBL;
  frh->table = table < 256 ? table : RT_TABLE_UNSPEC;
  mnl_attr_put_u32(nlh, FRA_PRIORITY, priority);
  if (table) mnl_attr_put_u32(nlh, FRA_TABLE, table);
  for (auto [key, attr] : {std::pair{"src", FRA_SRC}, std::pair{"dst", FRA_DST}}) {
    if (!Has(c, key)) continue;
    Address a;
    if (!ParseAddress(Str(c, key), true, a) || a.family != family) return Refuse(p, std::string(key) + " " + Str(c, key) + " (not of the rule's family)");
    (attr == FRA_SRC ? frh->src_len : frh->dst_len) = a.length;
    mnl_attr_put(nlh, attr, a.size(), a.bytes);
  }
  if (Has(c, "iif")) mnl_attr_put_strz(nlh, FRA_IIFNAME, Str(c, "iif").c_str());
  if (Has(c, "fwmark")) mnl_attr_put_u32(nlh, FRA_FWMARK, U32(c, "fwmark", 0));
  if (Has(c, "fwmask")) mnl_attr_put_u32(nlh, FRA_FWMASK, U32(c, "fwmask", 0));
}

// { kind: 'neighbour', op: 'replace'|'del', dev, address, lladdr? } (replace makes it permanent) and
// { kind: 'fdb', op: 'append'|'del', dev, mac, dst } (a static entry of the device itself: `self`)
void BuildNeighbour(const Napi::Object& c, const std::string& kind, const std::string& op, NetlinkChange& p) {
  bool fdb = kind == "fdb";
  std::string dev = Str(c, "dev");
  std::string address = Str(c, fdb ? "dst" : "address");
  p.operation = fdb ? "fdb " + op + " " + Str(c, "mac") + " dst " + address + " dev " + dev
                    : "neighbour " + op + " " + address + " dev " + dev;
  bool del = op == "del";
  if (!del && op != (fdb ? "append" : "replace")) return Refuse(p, "unknown operation");
  Address a;
  if (!ParseAddress(address, false, a)) return Refuse(p, "address " + address);
  uint8_t mac[6];
  bool hasMac = fdb || Has(c, "lladdr");
  if (hasMac && !ParseMac(Str(c, fdb ? "mac" : "lladdr"), mac)) return Refuse(p, "MAC address " + Str(c, fdb ? "mac" : "lladdr"));
  unsigned index = Device(p, dev);
  if (index == 0) return;
  uint16_t flags = del ? 0 : fdb ? NLM_F_CREATE | NLM_F_APPEND : NLM_F_CREATE | NLM_F_REPLACE;
  nlmsghdr* nlh = Header(p, del ? RTM_DELNEIGH : RTM_NEWNEIGH, flags);
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = fdb ? AF_BRIDGE : a.family;
  ndm->ndm_ifindex = static_cast<int>(index);
  ndm->ndm_state = NUD_PERMANENT;
  if (fdb) ndm->ndm_flags = NTF_SELF;
  mnl_attr_put(nlh, NDA_DST, a.size(), a.bytes);
  if (hasMac && (fdb || !del)) mnl_attr_put(nlh, NDA_LLADDR, 6, mac);
}

// { kind: 'link', op: 'add', name, type: 'vxlan'|'xfrm', mtu?, address?, vni?, local?, remote?, port?,
//   external?, ifId?, noarp? } | { kind: 'link', op: 'set', name, mtu?, up?, noarp? } | { kind: 'link', op: 'del', name }
void BuildLink(const Napi::Object& c, const std::string& op, NetlinkChange& p) {
  std::string name = Str(c, "name");
  p.operation = "link " + op + " " + name;
  if (name.empty() || name.size() >= IF_NAMESIZE) return Refuse(p, "name " + name);
  if (op == "add" && !Has(c, "type")) return Refuse(p, "a new link needs a type");
  if (op != "add" && op != "set" && op != "del") return Refuse(p, "unknown operation");
  nlmsghdr* nlh = Header(p, op == "del" ? RTM_DELLINK : RTM_NEWLINK, op == "add" ? NLM_F_CREATE | NLM_F_EXCL : 0);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  if (c.Get("up").ToBoolean()) {
    ifi->ifi_flags |= IFF_UP;
    ifi->ifi_change |= IFF_UP;
  }
  // Set or cleared where given, left as it is where not.
  if (Has(c, "noarp")) {
    if (c.Get("noarp").ToBoolean()) ifi->ifi_flags |= IFF_NOARP;
    ifi->ifi_change |= IFF_NOARP;
  }
  // By name, resolved by the kernel when it handles the message: a link added earlier in the same batch
  // is found (ENODEV when there is none).
  mnl_attr_put_strz(nlh, IFLA_IFNAME, name.c_str());
  if (op == "del") return;
  if (Has(c, "mtu")) mnl_attr_put_u32(nlh, IFLA_MTU, U32(c, "mtu", 0));
  if (Has(c, "address")) {
    uint8_t mac[6];
    if (!ParseMac(Str(c, "address"), mac)) return Refuse(p, "address " + Str(c, "address"));
    mnl_attr_put(nlh, IFLA_ADDRESS, 6, mac);
  }
  if (op != "add") return;
  std::string type = Str(c, "type");
  nlattr* linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, type.c_str());
  nlattr* data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  if (type == "vxlan") {
    bool external = c.Get("external").ToBoolean();
    if (external) mnl_attr_put_u8(nlh, IFLA_VXLAN_COLLECT_METADATA, 1);
    else mnl_attr_put_u32(nlh, IFLA_VXLAN_ID, U32(c, "vni", 0));
    // Either family (an IPv6 underlay: LOCAL6, GROUP6), both ends of one.
    int family = 0;
    for (auto [key, attr4, attr6] : {std::tuple{"local", IFLA_VXLAN_LOCAL, IFLA_VXLAN_LOCAL6}, std::tuple{"remote", IFLA_VXLAN_GROUP, IFLA_VXLAN_GROUP6}}) {
      if (!Has(c, key)) continue;
      Address a;
      if (!ParseAddress(Str(c, key), false, a) || (family && a.family != family)) return Refuse(p, std::string(key) + " " + Str(c, key));
      family = a.family;
      mnl_attr_put(nlh, a.family == AF_INET6 ? attr6 : attr4, a.size(), a.bytes);
    }
    mnl_attr_put_u16(nlh, IFLA_VXLAN_PORT, htons(static_cast<uint16_t>(U32(c, "port", 4789))));
    // As `ip link add ... nolearning` and `external` (which turns learning off too).
    mnl_attr_put_u8(nlh, IFLA_VXLAN_LEARNING, 0);
  } else if (type == "xfrm") {
    mnl_attr_put_u32(nlh, IFLA_XFRM_IF_ID, U32(c, "ifId", 0));
  } else {
    return Refuse(p, "type " + type);
  }
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, linkinfo);
}

// rtnlApply(netns, changes) -> (BpfError | null)[]: one result per change, in order.
Napi::Value Apply(const Napi::CallbackInfo& info) {
  return ApplyChanges(info, NETLINK_ROUTE, [&](const Napi::Object& c, const std::string& kind, const std::string& op, NetlinkChange& p) {
    if (kind == "route") BuildRoute(c, op, p);
    else if (kind == "rule") BuildRule(c, op, p);
    else if (kind == "neighbour" || kind == "fdb") BuildNeighbour(c, kind, op, p);
    else if (kind == "link") BuildLink(c, op, p);
    else throw Napi::TypeError::New(info.Env(), "change.kind must be route, rule, neighbour, fdb or link");
  });
}

}  // namespace

void InitNetlinkRoute(Napi::Env env, Napi::Object exports) {
  exports.Set("rtnlRouteDump", Napi::Function::New(env, RouteDump));
  exports.Set("rtnlRuleDump", Napi::Function::New(env, RuleDump));
  exports.Set("rtnlNeighbourDump", Napi::Function::New(env, NeighbourDump));
  exports.Set("rtnlLinkDump", Napi::Function::New(env, LinkDump));
  exports.Set("rtnlAddressDump", Napi::Function::New(env, AddressDump));
  exports.Set("rtnlApply", Napi::Function::New(env, Apply));
}

}  // namespace strait
