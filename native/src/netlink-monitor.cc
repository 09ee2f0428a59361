// Kernel change events from netlink multicast groups: rtnetlink (links, addresses, routes, rules,
// neighbours and FDB entries), xfrm (states, policies) and nftables, each on its own socket opened in a
// network namespace (a socket keeps the namespace it was created in). The sockets are polled on Node's
// event loop (uv_poll_t, no thread); each readable socket is drained and its messages handed to one
// JavaScript callback as a batch of parsed events. A receive buffer that overflowed (ENOBUFS) lost
// events: reported as {kind: 'overflow'}, meaning "read everything again".
//
// A monitor is an id owned by JavaScript and released only by netlinkMonitorClose, never by garbage
// collection. Its poll handles are unreferenced: a monitor only tells someone who has work of their own
// (the agent's timer, a test) that something changed, so it must never be what keeps a process alive
// (a CLI command or a test that forgot close() would otherwise hang instead of exiting).
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/fib_rules.h>
#include <linux/neighbour.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/xfrm.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "addon.h"

namespace strait {

namespace {

struct Monitor;

struct Socket {
  Monitor* owner;
  int bus;
  struct mnl_socket* nl;
  uv_poll_t poll;
  bool polling;
};

struct Monitor {
  napi_env env;
  Napi::FunctionReference callback;
  std::unique_ptr<Napi::AsyncContext> context;
  std::vector<Socket*> sockets;
  int pendingCloses = 0;
};

std::map<uint32_t, Monitor*> monitors;
uint32_t nextMonitorId = 1;

// Room for a burst of our own writes (the fallback programs thousands of routes at once) before the
// kernel drops events; needs CAP_NET_ADMIN to exceed net.core.rmem_max, else the sysctl's size is used.
constexpr int kReceiveBuffer = 8 << 20;
// Reads per wakeup: a socket flooded with events still lets the event loop run (poll is level-triggered).
constexpr int kReadsPerWakeup = 64;

const char* Action(bool isNew) { return isNew ? "new" : "del"; }

Napi::Object Event(Napi::Env env, const char* kind, const char* action) {
  Napi::Object e = Napi::Object::New(env);
  e.Set("kind", kind);
  e.Set("action", action);
  return e;
}

int LinkNameAttr(const struct nlattr* attr, void* data) {
  if (mnl_attr_get_type(attr) == IFLA_IFNAME && mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0)
    *static_cast<const char**>(data) = mnl_attr_get_str(attr);
  return MNL_CB_OK;
}

int RouteTableAttr(const struct nlattr* attr, void* data) {
  if (mnl_attr_get_type(attr) == RTA_TABLE && mnl_attr_validate(attr, MNL_TYPE_U32) >= 0)
    *static_cast<uint32_t*>(data) = mnl_attr_get_u32(attr);
  return MNL_CB_OK;
}

// One rtnetlink message as an event; false for a message no subscriber asked about.
bool RouteEvent(Napi::Env env, const struct nlmsghdr* nlh, Napi::Object* out) {
  switch (nlh->nlmsg_type) {
    case RTM_NEWLINK:
    case RTM_DELLINK: {
      if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct ifinfomsg))) return false;
      auto* ifi = static_cast<const struct ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
      const char* name = nullptr;
      mnl_attr_parse(nlh, sizeof(*ifi), LinkNameAttr, &name);
      *out = Event(env, "link", Action(nlh->nlmsg_type == RTM_NEWLINK));
      out->Set("ifindex", ifi->ifi_index);
      if (name != nullptr) out->Set("ifname", name);
      out->Set("family", ifi->ifi_family);
      return true;
    }
    case RTM_NEWADDR:
    case RTM_DELADDR: {
      if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct ifaddrmsg))) return false;
      auto* ifa = static_cast<const struct ifaddrmsg*>(mnl_nlmsg_get_payload(nlh));
      *out = Event(env, "addr", Action(nlh->nlmsg_type == RTM_NEWADDR));
      out->Set("family", ifa->ifa_family);
      out->Set("ifindex", ifa->ifa_index);
      return true;
    }
    case RTM_NEWROUTE:
    case RTM_DELROUTE: {
      if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct rtmsg))) return false;
      auto* rtm = static_cast<const struct rtmsg*>(mnl_nlmsg_get_payload(nlh));
      uint32_t table = rtm->rtm_table;
      mnl_attr_parse(nlh, sizeof(*rtm), RouteTableAttr, &table);
      *out = Event(env, "route", Action(nlh->nlmsg_type == RTM_NEWROUTE));
      out->Set("family", rtm->rtm_family);
      out->Set("table", table);
      return true;
    }
    case RTM_NEWRULE:
    case RTM_DELRULE: {
      if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct fib_rule_hdr))) return false;
      auto* frh = static_cast<const struct fib_rule_hdr*>(mnl_nlmsg_get_payload(nlh));
      *out = Event(env, "rule", Action(nlh->nlmsg_type == RTM_NEWRULE));
      out->Set("family", frh->family);
      return true;
    }
    case RTM_NEWNEIGH:
    case RTM_DELNEIGH: {
      if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct ndmsg))) return false;
      auto* ndm = static_cast<const struct ndmsg*>(mnl_nlmsg_get_payload(nlh));
      // Bridge FDB entries (VXLAN's among them) are neighbour messages of the bridge family.
      *out = Event(env, ndm->ndm_family == AF_BRIDGE ? "fdb" : "neigh", Action(nlh->nlmsg_type == RTM_NEWNEIGH));
      out->Set("family", ndm->ndm_family);
      out->Set("ifindex", ndm->ndm_ifindex);
      return true;
    }
    default:
      return false;
  }
}

bool XfrmEvent(Napi::Env env, const struct nlmsghdr* nlh, Napi::Object* out) {
  const char* object;
  bool isNew;
  switch (nlh->nlmsg_type) {
    case XFRM_MSG_NEWSA: case XFRM_MSG_UPDSA: object = "state"; isNew = true; break;
    case XFRM_MSG_DELSA: case XFRM_MSG_EXPIRE: case XFRM_MSG_FLUSHSA: object = "state"; isNew = false; break;
    case XFRM_MSG_NEWPOLICY: case XFRM_MSG_UPDPOLICY: object = "policy"; isNew = true; break;
    case XFRM_MSG_DELPOLICY: case XFRM_MSG_POLEXPIRE: case XFRM_MSG_FLUSHPOLICY: object = "policy"; isNew = false; break;
    default: return false;
  }
  *out = Event(env, "xfrm", Action(isNew));
  out->Set("object", object);
  return true;
}

bool NftEvent(Napi::Env env, const struct nlmsghdr* nlh, Napi::Object* out) {
  if (NFNL_SUBSYS_ID(nlh->nlmsg_type) != NFNL_SUBSYS_NFTABLES) return false;
  int msg = NFNL_MSG_TYPE(nlh->nlmsg_type);
  // Tables, chains, rules, sets and elements come in new/get/delete triples; the generation message
  // that closes every transaction is not a change of its own.
  static const char* const objects[] = {"table", "chain", "rule", "set", "setelem"};
  if (msg == NFT_MSG_NEWGEN || msg == NFT_MSG_GETGEN) return false;
  if (msg < NFT_MSG_NEWGEN) {
    if (msg % 3 == 1) return false;  // a get
    *out = Event(env, "nft", Action(msg % 3 == 0));
    out->Set("object", objects[msg / 3]);
    return true;
  }
  *out = Event(env, "nft", "new");
  out->Set("object", "other");
  return true;
}

void ParseBatch(Napi::Env env, int bus, const char* buf, size_t len, Napi::Array& events) {
  const struct nlmsghdr* nlh = reinterpret_cast<const struct nlmsghdr*>(buf);
  int remaining = static_cast<int>(len);
  while (mnl_nlmsg_ok(nlh, remaining)) {
    Napi::Object e;
    bool got = bus == NETLINK_ROUTE ? RouteEvent(env, nlh, &e) : bus == NETLINK_XFRM ? XfrmEvent(env, nlh, &e) : NftEvent(env, nlh, &e);
    if (got) events[events.Length()] = e;
    nlh = mnl_nlmsg_next(nlh, &remaining);
  }
}

void Deliver(Monitor* m, Napi::Array events) {
  Napi::Env env(m->env);
  if (m->callback.IsEmpty()) return;
  try {
    m->callback.MakeCallback(env.Global(), {events}, *m->context);
  } catch (const Napi::Error& e) {
    // As from any event listener: the process's uncaughtException, not a swallowed error.
    napi_fatal_exception(m->env, e.Value());
  }
}

void OnReadable(uv_poll_t* handle, int status, int /*events*/) {
  auto* s = static_cast<Socket*>(handle->data);
  Monitor* m = s->owner;
  Napi::Env env(m->env);
  Napi::HandleScope scope(env);
  Napi::Array events = Napi::Array::New(env);
  // libuv reports a pending socket error (EPOLLERR: netlink's ENOBUFS) as UV_EBADF and stops the
  // handle. The error itself is what recv returns next: poll again, and read on.
  if (status < 0) uv_poll_start(&s->poll, UV_READABLE, OnReadable);
  static char buf[1 << 16];
  for (int i = 0; i < kReadsPerWakeup; i++) {
    ssize_t n = recv(mnl_socket_get_fd(s->nl), buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0) {
      int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) break;
      Napi::Object e = Napi::Object::New(env);
      e.Set("kind", "overflow");
      e.Set("code", ErrnoName(err));
      events[events.Length()] = e;
      // ENOBUFS: the kernel dropped events; the socket carries on with the next ones.
      if (err == ENOBUFS) continue;
      // Anything else would come back at every wakeup: this socket is done (and said so).
      uv_poll_stop(&s->poll);
      break;
    }
    ParseBatch(env, s->bus, buf, static_cast<size_t>(n), events);
  }
  if (events.Length() > 0) Deliver(m, events);
}

void OnClosed(uv_handle_t* handle) {
  auto* s = static_cast<Socket*>(handle->data);
  Monitor* m = s->owner;
  delete s;
  if (--m->pendingCloses == 0) delete m;
}

// Stops polling and closes every socket now (the fds are free when this returns); the handles' memory
// goes once libuv has closed them.
void CloseMonitor(Monitor* m) {
  m->callback.Reset();
  for (Socket* s : m->sockets) {
    if (!s->polling) {
      mnl_socket_close(s->nl);
      delete s;
      continue;
    }
    // Out of epoll (and this loop iteration's pending events) before the fd goes.
    uv_poll_stop(&s->poll);
    mnl_socket_close(s->nl);
    m->pendingCloses++;
    uv_close(reinterpret_cast<uv_handle_t*>(&s->poll), OnClosed);
  }
  m->sockets.clear();
  if (m->pendingCloses == 0) delete m;
}

// Opens one socket of `bus` in the current namespace, joined to `groups`, polled on the event loop.
void OpenSocket(Napi::Env env, Monitor* m, int bus, const std::vector<unsigned>& groups) {
  const char* operation = bus == NETLINK_ROUTE ? "open rtnetlink monitor" : bus == NETLINK_XFRM ? "open xfrm netlink monitor" : "open nftables netlink monitor";
  struct mnl_socket* nl = mnl_socket_open2(bus, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (nl == nullptr) ThrowNativeError(env, NativeErrorKind::kNetlink, operation, errno);
  // Owned by the monitor from here, so a failure below closes it with the rest.
  auto* s = new Socket{m, bus, nl, {}, false};
  m->sockets.push_back(s);
  int fd = mnl_socket_get_fd(nl);
  int size = kReceiveBuffer;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) != 0) ThrowNativeError(env, NativeErrorKind::kNetlink, operation, errno, "bind");
  for (unsigned group : groups) {
    if (mnl_socket_setsockopt(nl, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) != 0)
      ThrowNativeError(env, NativeErrorKind::kNetlink, operation, errno, "join group " + std::to_string(group));
  }
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok) ThrowNativeError(env, NativeErrorKind::kNetlink, operation, EINVAL, "no event loop");
  int rc = uv_poll_init(loop, &s->poll, fd);
  if (rc != 0) ThrowNativeError(env, NativeErrorKind::kNetlink, operation, -rc, "uv_poll_init");
  s->poll.data = s;
  s->polling = true;
  uv_unref(reinterpret_cast<uv_handle_t*>(&s->poll));
  rc = uv_poll_start(&s->poll, UV_READABLE, OnReadable);
  if (rc != 0) ThrowNativeError(env, NativeErrorKind::kNetlink, operation, -rc, "uv_poll_start");
}

// netlinkMonitorOpen(netns | null, groups: string[], callback(events)) -> id
Napi::Value NetlinkMonitorOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  if (!info[1].IsArray()) throw Napi::TypeError::New(env, "argument 'groups' must be an array of strings");
  if (!info[2].IsFunction()) throw Napi::TypeError::New(env, "argument 'callback' must be a function");
  std::vector<unsigned> route, xfrm, nft;
  Napi::Array groups = info[1].As<Napi::Array>();
  for (uint32_t i = 0; i < groups.Length(); i++) {
    std::string g = groups.Get(i).ToString().Utf8Value();
    if (g == "link") route.push_back(RTNLGRP_LINK);
    else if (g == "addr") route.insert(route.end(), {RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR});
    else if (g == "route") route.insert(route.end(), {RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE});
    else if (g == "rule") route.insert(route.end(), {RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE});
    else if (g == "neigh") route.push_back(RTNLGRP_NEIGH);  // neighbours and FDB entries
    else if (g == "xfrm") xfrm.insert(xfrm.end(), {XFRMNLGRP_SA, XFRMNLGRP_POLICY});
    else if (g == "nft") nft.push_back(NFNLGRP_NFTABLES);
    else throw Napi::TypeError::New(env, "unknown netlink monitor group '" + g + "' (link, addr, route, rule, neigh, xfrm, nft)");
  }
  auto* m = new Monitor{env, Napi::Persistent(info[2].As<Napi::Function>()), std::make_unique<Napi::AsyncContext>(env, "strait:netlinkMonitor"), {}, 0};
  try {
    NetnsGuard guard(env, netns);
    if (!route.empty()) OpenSocket(env, m, NETLINK_ROUTE, route);
    if (!xfrm.empty()) OpenSocket(env, m, NETLINK_XFRM, xfrm);
    if (!nft.empty()) OpenSocket(env, m, NETLINK_NETFILTER, nft);
  } catch (...) {
    CloseMonitor(m);
    throw;
  }
  uint32_t id = nextMonitorId++;
  monitors[id] = m;
  return Napi::Number::New(env, id);
}

// netlinkMonitorClose(id) -> whether it was open
Napi::Value NetlinkMonitorClose(const Napi::CallbackInfo& info) {
  auto it = monitors.find(ArgU32(info, 0, "monitorId"));
  if (it == monitors.end()) return Napi::Boolean::New(info.Env(), false);
  Monitor* m = it->second;
  monitors.erase(it);
  CloseMonitor(m);
  return Napi::Boolean::New(info.Env(), true);
}

}  // namespace

void InitNetlinkMonitor(Napi::Env env, Napi::Object exports) {
  exports.Set("netlinkMonitorOpen", Napi::Function::New(env, NetlinkMonitorOpen));
  exports.Set("netlinkMonitorClose", Napi::Function::New(env, NetlinkMonitorClose));
}

}  // namespace strait
