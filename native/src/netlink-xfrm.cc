// xfrm netlink through libmnl: the IPsec states and policies the IPsec reconciler reads and writes. As
// rtnetlink (netlink-route.cc): every call opens its own socket in the namespace it is given, a batch of
// changes gives one result per change. States carry keys: a key leaves the kernel only as a Buffer
// returned to the caller, goes in only inside the message sent, which is wiped after the send, and never
// enters an operation name or an error's text.
#include <arpa/inet.h>
#include <linux/xfrm.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <string>
#include <vector>

#include "netlink.h"

namespace strait {
namespace {

// The limits `ip xfrm` sets when none is given: none (a zero limit would expire the entry at once).
void NoLimits(xfrm_lifetime_cfg& lft) {
  lft.soft_byte_limit = lft.hard_byte_limit = XFRM_INF;
  lft.soft_packet_limit = lft.hard_packet_limit = XFRM_INF;
}

std::string Format(uint16_t family, const xfrm_address_t& a) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, &a, text, sizeof(text));
  return text;
}

std::string Hex32(uint32_t n) {
  char text[11];
  snprintf(text, sizeof(text), "0x%08x", n);
  return text;
}

struct XfrmAttrs {
  const nlattr* tb[XFRMA_MAX + 1] = {};
};

XfrmAttrs Parse(const nlmsghdr* nlh, size_t header) {
  XfrmAttrs a;
  mnl_attr_parse(nlh, header, [](const nlattr* attr, void* data) -> int {
    uint16_t type = mnl_attr_get_type(attr);
    if (type <= XFRMA_MAX) static_cast<XfrmAttrs*>(data)->tb[type] = attr;
    return MNL_CB_OK;
  }, &a);
  return a;
}

uint32_t IfId(const XfrmAttrs& a) { return a.tb[XFRMA_IF_ID] ? mnl_attr_get_u32(a.tb[XFRMA_IF_ID]) : 0; }

// xfrmStateDump(netns) -> [{ src, dst, proto, spi, reqid, mode, ifId, afUnspec, aead?: { name, icvBits, key } }]:
// every state; `afUnspec`: its selector has no family (flag af-unspec), so in tunnel mode it carries
// inner packets of either family; `key` is a Buffer of the AEAD key (with its salt), for the caller to
// digest and drop.
Napi::Value StateDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  NetnsGuard guard(env, netns);
  Napi::Array out = Napi::Array::New(env);
  uint32_t count = 0;
  NetlinkDump(env, NETLINK_XFRM, "dump xfrm states", [](nlmsghdr* req) { req->nlmsg_type = XFRM_MSG_GETSA; },
              [&](const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != XFRM_MSG_NEWSA) return;
    auto* sa = static_cast<const xfrm_usersa_info*>(mnl_nlmsg_get_payload(nlh));
    XfrmAttrs a = Parse(nlh, sizeof(xfrm_usersa_info));
    Napi::Object s = Napi::Object::New(env);
    s.Set("src", Format(sa->family, sa->saddr));
    s.Set("dst", Format(sa->family, sa->id.daddr));
    s.Set("proto", sa->id.proto);
    s.Set("spi", ntohl(sa->id.spi));
    s.Set("reqid", sa->reqid);
    s.Set("mode", sa->mode);
    s.Set("ifId", IfId(a));
    s.Set("afUnspec", sa->sel.family == AF_UNSPEC);
    if (const nlattr* attr = a.tb[XFRMA_ALG_AEAD]) {
      auto* aead = static_cast<const xfrm_algo_aead*>(mnl_attr_get_payload(attr));
      size_t bytes = std::min<size_t>((aead->alg_key_len + 7) / 8, mnl_attr_get_payload_len(attr) - sizeof(xfrm_algo_aead));
      Napi::Object o = Napi::Object::New(env);
      o.Set("name", std::string(aead->alg_name, strnlen(aead->alg_name, sizeof(aead->alg_name))));
      o.Set("icvBits", aead->alg_icv_len);
      o.Set("key", Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(aead->alg_key), bytes));
      s.Set("aead", o);
    }
    out[count++] = s;
  });
  return out;
}

std::string Prefix(uint16_t family, const xfrm_address_t& a, unsigned length) {
  return Format(family, a) + "/" + std::to_string(length);
}

// xfrmPolicyDump(netns) -> [{ dir, index, priority, src, dst, proto, sport, dport, ifindex, ifId, mark?:
// { value, mask }, tmpls: [{ src, dst, proto, reqid, mode }] }]: every policy, `dir` as the kernel numbers
// it (in 0, out 1, fwd 2; a socket's policy adds XFRM_POLICY_MAX), the selector's ports in host order.
Napi::Value PolicyDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  NetnsGuard guard(env, netns);
  Napi::Array out = Napi::Array::New(env);
  uint32_t count = 0;
  NetlinkDump(env, NETLINK_XFRM, "dump xfrm policies", [](nlmsghdr* req) { req->nlmsg_type = XFRM_MSG_GETPOLICY; },
              [&](const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != XFRM_MSG_NEWPOLICY) return;
    auto* pol = static_cast<const xfrm_userpolicy_info*>(mnl_nlmsg_get_payload(nlh));
    XfrmAttrs a = Parse(nlh, sizeof(xfrm_userpolicy_info));
    const xfrm_selector& sel = pol->sel;
    uint16_t family = sel.family == AF_INET6 ? AF_INET6 : AF_INET;
    Napi::Object p = Napi::Object::New(env);
    p.Set("dir", pol->dir);
    p.Set("index", pol->index);
    p.Set("priority", pol->priority);
    p.Set("src", Prefix(family, sel.saddr, sel.prefixlen_s));
    p.Set("dst", Prefix(family, sel.daddr, sel.prefixlen_d));
    p.Set("proto", sel.proto);
    p.Set("sport", ntohs(sel.sport));
    p.Set("dport", ntohs(sel.dport));
    p.Set("ifindex", sel.ifindex);
    p.Set("ifId", IfId(a));
    if (a.tb[XFRMA_MARK]) {
      auto* mark = static_cast<const xfrm_mark*>(mnl_attr_get_payload(a.tb[XFRMA_MARK]));
      Napi::Object m = Napi::Object::New(env);
      m.Set("value", mark->v);
      m.Set("mask", mark->m);
      p.Set("mark", m);
    }
    Napi::Array tmpls = Napi::Array::New(env);
    if (const nlattr* attr = a.tb[XFRMA_TMPL]) {
      auto* t = static_cast<const xfrm_user_tmpl*>(mnl_attr_get_payload(attr));
      size_t n = mnl_attr_get_payload_len(attr) / sizeof(xfrm_user_tmpl);
      for (size_t i = 0; i < n; i++) {
        uint16_t tf = t[i].family == AF_INET6 ? AF_INET6 : AF_INET;
        Napi::Object o = Napi::Object::New(env);
        o.Set("src", Format(tf, t[i].saddr));
        o.Set("dst", Format(tf, t[i].id.daddr));
        o.Set("proto", t[i].id.proto);
        o.Set("reqid", t[i].reqid);
        o.Set("mode", t[i].mode);
        tmpls[static_cast<uint32_t>(i)] = o;
      }
    }
    p.Set("tmpls", tmpls);
    out[count++] = p;
  });
  return out;
}

// ---- changes ----

// An IPv4 or IPv6 address, or a network with /len (its length in `length`): its family (AF_INET or
// AF_INET6), 0 when it is neither.
int ParseXfrmAddress(const std::string& text, bool prefix, xfrm_address_t& out, uint8_t* length = nullptr) {
  Address parsed;
  memset(&out, 0, sizeof(out));
  if (!ParseAddress(text, prefix, parsed)) return 0;
  memcpy(&out, parsed.bytes, parsed.size());
  if (prefix) *length = static_cast<uint8_t>(parsed.length);
  return parsed.family;
}

std::string DirName(uint32_t dir) {
  static const char* names[] = {"in", "out", "fwd"};
  return dir <= XFRM_POLICY_FWD ? names[dir] : std::to_string(dir);
}

// { kind: 'state', op: 'add', src, dst, spi, reqid, ifId, aead, icvBits, key: Buffer, afUnspec? } (an ESP
// state in tunnel mode) | { kind: 'state', op: 'del', src, dst, spi }. The state's selector stays empty;
// the kernel gives an empty selector the family of the state's addresses (copy_from_user_state), and a
// tunnel-mode state then carries inner packets of that family only, unless `afUnspec` sets
// XFRM_STATE_AF_UNSPEC (`ip xfrm state ... flag af-unspec`): the selector keeps no family, and the state
// carries either inner family (IPv6 through an IPv4 tunnel and IPv4 through it alike).
void BuildState(const Napi::Object& o, const std::string& op, NetlinkChange& c) {
  std::string src = Str(o, "src"), dst = Str(o, "dst");
  uint32_t spi = U32(o, "spi");
  c.operation = "xfrm state " + op + " " + src + " -> " + dst + " spi " + Hex32(spi);
  xfrm_address_t saddr, daddr;
  int family = ParseXfrmAddress(src, false, saddr);
  if (!family || family != ParseXfrmAddress(dst, false, daddr)) return Refuse(c, "the addresses are not both IPv4 or both IPv6");
  if (op == "del") {
    nlmsghdr* nlh = Header(c, XFRM_MSG_DELSA, 0, 2048);
    auto* id = static_cast<xfrm_usersa_id*>(mnl_nlmsg_put_extra_header(nlh, sizeof(xfrm_usersa_id)));
    id->daddr = daddr;
    id->spi = htonl(spi);
    id->family = static_cast<uint16_t>(family);
    id->proto = IPPROTO_ESP;
    mnl_attr_put(nlh, XFRMA_SRCADDR, sizeof(saddr), &saddr);
    return;
  }
  if (op != "add") return Refuse(c, "unknown operation");
  Napi::Value key = o.Get("key");
  if (!key.IsBuffer()) throw Napi::TypeError::New(o.Env(), "change.key must be a Buffer");
  auto bytes = key.As<Napi::Buffer<uint8_t>>();
  std::string aead = Str(o, "aead");
  if (aead.size() >= sizeof(xfrm_algo_aead::alg_name) || bytes.Length() > 512) return Refuse(c, "AEAD algorithm name or key too long");
  nlmsghdr* nlh = Header(c, XFRM_MSG_NEWSA, NLM_F_CREATE | NLM_F_EXCL, 2048);
  auto* sa = static_cast<xfrm_usersa_info*>(mnl_nlmsg_put_extra_header(nlh, sizeof(xfrm_usersa_info)));
  sa->id.daddr = daddr;
  sa->id.spi = htonl(spi);
  sa->id.proto = IPPROTO_ESP;
  sa->saddr = saddr;
  sa->family = static_cast<uint16_t>(family);
  sa->mode = XFRM_MODE_TUNNEL;
  sa->reqid = U32(o, "reqid");
  if (o.Get("afUnspec").ToBoolean()) sa->flags |= XFRM_STATE_AF_UNSPEC;
  NoLimits(sa->lft);
  std::vector<char> alg(sizeof(xfrm_algo_aead) + bytes.Length(), 0);
  auto* aeadAlg = reinterpret_cast<xfrm_algo_aead*>(alg.data());
  memcpy(aeadAlg->alg_name, aead.data(), aead.size());
  aeadAlg->alg_key_len = static_cast<unsigned>(bytes.Length() * 8);
  aeadAlg->alg_icv_len = U32(o, "icvBits");
  memcpy(aeadAlg->alg_key, bytes.Data(), bytes.Length());
  mnl_attr_put(nlh, XFRMA_ALG_AEAD, alg.size(), alg.data());
  explicit_bzero(alg.data(), alg.size());
  mnl_attr_put_u32(nlh, XFRMA_IF_ID, U32(o, "ifId"));
}

// { kind: 'policy', op: 'add'|'update', dir, src, dst, ifId, tmplSrc, tmplDst, reqid } (one ESP template
// in tunnel mode) | { kind: 'policy', op: 'del', dir, index, ifId, mark?: { value, mask } } (by the
// index a dump gave, which names one policy whatever its selector)
void BuildPolicy(const Napi::Object& o, const std::string& op, NetlinkChange& c) {
  uint32_t dir = U32(o, "dir"), ifId = U32(o, "ifId");
  if (op == "del") {
    uint32_t index = U32(o, "index");
    c.operation = "xfrm policy del dir " + DirName(dir) + " index " + std::to_string(index);
    nlmsghdr* nlh = Header(c, XFRM_MSG_DELPOLICY, 0, 2048);
    auto* id = static_cast<xfrm_userpolicy_id*>(mnl_nlmsg_put_extra_header(nlh, sizeof(xfrm_userpolicy_id)));
    id->index = index;
    id->dir = static_cast<uint8_t>(dir);
    if (ifId) mnl_attr_put_u32(nlh, XFRMA_IF_ID, ifId);
    Napi::Value mark = o.Get("mark");
    if (mark.IsObject()) {
      xfrm_mark m = {U32(mark.As<Napi::Object>(), "value"), U32(mark.As<Napi::Object>(), "mask")};
      mnl_attr_put(nlh, XFRMA_MARK, sizeof(m), &m);
    }
    return;
  }
  std::string src = Str(o, "src"), dst = Str(o, "dst");
  c.operation = "xfrm policy " + op + " dir " + DirName(dir) + " src " + src + " dst " + dst;
  if (op != "add" && op != "update") return Refuse(c, "unknown operation");
  if (dir > XFRM_POLICY_FWD) return Refuse(c, "dir must be in, out or fwd");
  nlmsghdr* nlh = Header(c, op == "add" ? XFRM_MSG_NEWPOLICY : XFRM_MSG_UPDPOLICY, op == "add" ? NLM_F_CREATE | NLM_F_EXCL : NLM_F_CREATE | NLM_F_REPLACE, 2048);
  auto* pol = static_cast<xfrm_userpolicy_info*>(mnl_nlmsg_put_extra_header(nlh, sizeof(xfrm_userpolicy_info)));
  // The selectors are of the inner packets' family, the template's addresses of the tunnel's (IPv6 in IPv4 is one).
  int family = ParseXfrmAddress(src, true, pol->sel.saddr, &pol->sel.prefixlen_s);
  if (!family || family != ParseXfrmAddress(dst, true, pol->sel.daddr, &pol->sel.prefixlen_d))
    return Refuse(c, "the selectors are not both IPv4 or both IPv6 networks");
  pol->sel.family = static_cast<uint16_t>(family);
  pol->dir = static_cast<uint8_t>(dir);
  pol->action = XFRM_POLICY_ALLOW;
  NoLimits(pol->lft);
  xfrm_user_tmpl t = {};
  int tunnel = ParseXfrmAddress(Str(o, "tmplSrc"), false, t.saddr);
  if (!tunnel || tunnel != ParseXfrmAddress(Str(o, "tmplDst"), false, t.id.daddr))
    return Refuse(c, "the template addresses are not both IPv4 or both IPv6");
  t.id.proto = IPPROTO_ESP;
  t.family = static_cast<uint16_t>(tunnel);
  t.reqid = U32(o, "reqid");
  t.mode = XFRM_MODE_TUNNEL;
  // Any algorithm, as `ip xfrm policy` sets by default.
  t.aalgos = t.ealgos = t.calgos = ~0u;
  mnl_attr_put(nlh, XFRMA_TMPL, sizeof(t), &t);
  if (ifId) mnl_attr_put_u32(nlh, XFRMA_IF_ID, ifId);
}

// xfrmApply(netns, changes) -> (BpfError | null)[]: one result per change, in order. The messages hold
// keys: wiped however the call ends.
Napi::Value Apply(const Napi::CallbackInfo& info) {
  return ApplyChanges(info, NETLINK_XFRM, [&](const Napi::Object& c, const std::string& kind, const std::string& op, NetlinkChange& change) {
    if (kind == "state") BuildState(c, op, change);
    else if (kind == "policy") BuildPolicy(c, op, change);
    else throw Napi::TypeError::New(info.Env(), "change.kind must be state or policy");
  }, true);
}

}  // namespace

void InitNetlinkXfrm(Napi::Env env, Napi::Object exports) {
  exports.Set("xfrmStateDump", Napi::Function::New(env, StateDump));
  exports.Set("xfrmPolicyDump", Napi::Function::New(env, PolicyDump));
  exports.Set("xfrmApply", Napi::Function::New(env, Apply));
}

}  // namespace strait
