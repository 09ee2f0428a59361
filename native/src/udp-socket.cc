// UDP sockets opened in a network namespace (a socket keeps the namespace it was created in), for the
// gateway liveness prober: Node's dgram sockets live in the process's namespace, and the lab's agents
// program a node's namespace from outside it. Polled on Node's event loop (uv_poll_t, no thread); each
// readable socket is drained and its datagrams handed to one JavaScript callback as a batch. Sending is
// synchronous and never blocks (a full buffer is an error, as a lost probe would be).
//
// A socket is an id owned by JavaScript, released only by udpSocketClose, never by garbage collection;
// its poll handle is unreferenced, as the netlink monitor's: it must not be what keeps a process alive.
//
// One socket for both families: IPv6 with IPV6_V6ONLY off, IPv4 peers as v4-mapped addresses (shown
// and taken as dotted IPv4), as nodes and peers may be probed over either underlay. Where the kernel has
// no IPv6 at all (ipv6.disable=1: EAFNOSUPPORT), an IPv4 socket, which refuses IPv6 addresses.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "addon.h"

namespace strait {

namespace {

struct UdpSocket {
  napi_env env;
  int fd;
  int family;  // AF_INET6 (both families), or AF_INET where the kernel has no IPv6
  Napi::FunctionReference callback;
  std::unique_ptr<Napi::AsyncContext> context;
  uv_poll_t poll;
  bool polling;
};

std::map<uint32_t, UdpSocket*> sockets;
uint32_t nextSocketId = 1;

// Enough for every reply of a round to a thousand targets before the next wakeup.
constexpr int kReadsPerWakeup = 1024;
constexpr size_t kMaxDatagram = 2048;

// Every datagram waiting on the socket, without blocking.
Napi::Array Drain(Napi::Env env, UdpSocket* s) {
  Napi::Array datagrams = Napi::Array::New(env);
  uint8_t buf[kMaxDatagram];
  for (int i = 0; i < kReadsPerWakeup; i++) {
    struct sockaddr_storage from = {};
    socklen_t fromLen = sizeof(from);
    ssize_t n = recvfrom(s->fd, buf, sizeof(buf), MSG_DONTWAIT, reinterpret_cast<struct sockaddr*>(&from), &fromLen);
    if (n < 0) {
      if (errno == EINTR) continue;
      // EAGAIN: drained. Anything else (ECONNREFUSED, EHOSTUNREACH from an ICMP error) concerns one
      // earlier datagram, which the prober counts as unanswered anyway: read on.
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      continue;
    }
    char address[INET6_ADDRSTRLEN] = {};
    uint16_t port = 0;
    if (from.ss_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const struct sockaddr_in6*>(&from);
      port = ntohs(in6->sin6_port);
      if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
        inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], address, sizeof(address));
      else
        inet_ntop(AF_INET6, &in6->sin6_addr, address, sizeof(address));
    } else {
      const auto* in = reinterpret_cast<const struct sockaddr_in*>(&from);
      port = ntohs(in->sin_port);
      inet_ntop(AF_INET, &in->sin_addr, address, sizeof(address));
    }
    Napi::Object d = Napi::Object::New(env);
    d.Set("address", address);
    d.Set("port", port);
    d.Set("data", Napi::Buffer<uint8_t>::Copy(env, buf, static_cast<size_t>(n)));
    datagrams[datagrams.Length()] = d;
  }
  return datagrams;
}

void OnReadable(uv_poll_t* handle, int status, int /*events*/) {
  auto* s = static_cast<UdpSocket*>(handle->data);
  Napi::Env env(s->env);
  Napi::HandleScope scope(env);
  // A pending socket error (an ICMP unreachable for an earlier send) stops the handle: poll again, and
  // let recvfrom return it and read on.
  if (status < 0) uv_poll_start(&s->poll, UV_READABLE, OnReadable);
  Napi::Array datagrams = Drain(env, s);
  if (datagrams.Length() == 0 || s->callback.IsEmpty()) return;
  try {
    s->callback.MakeCallback(env.Global(), {datagrams}, *s->context);
  } catch (const Napi::Error& e) {
    napi_fatal_exception(s->env, e.Value());
  }
}

void OnClosed(uv_handle_t* handle) { delete static_cast<UdpSocket*>(handle->data); }

void CloseSocket(UdpSocket* s) {
  s->callback.Reset();
  if (!s->polling) {
    if (s->fd >= 0) close(s->fd);
    delete s;
    return;
  }
  uv_poll_stop(&s->poll);
  close(s->fd);
  uv_close(reinterpret_cast<uv_handle_t*>(&s->poll), OnClosed);
}

// udpSocketOpen(netns | null, callback(datagrams)) -> id: a UDP socket of both families on an ephemeral port.
Napi::Value UdpSocketOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  if (!info[1].IsFunction()) throw Napi::TypeError::New(env, "argument 'callback' must be a function");
  auto* s = new UdpSocket{env, -1, AF_INET6, Napi::Persistent(info[1].As<Napi::Function>()),
                          std::make_unique<Napi::AsyncContext>(env, "strait:udpSocket"), {}, false};
  try {
    {
      NetnsGuard guard(env, netns);
      s->fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (s->fd < 0 && errno == EAFNOSUPPORT) {
        s->family = AF_INET;
        s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      }
      if (s->fd < 0) ThrowNativeError(env, NativeErrorKind::kSocket, "open UDP socket", errno, netns);
    }
    int rc = 0;
    if (s->family == AF_INET6) {
      int off = 0;
      if (setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) != 0)
        ThrowNativeError(env, NativeErrorKind::kSocket, "open UDP socket of both families", errno, netns);
      struct sockaddr_in6 any = {};
      any.sin6_family = AF_INET6;
      rc = bind(s->fd, reinterpret_cast<struct sockaddr*>(&any), sizeof(any));
    } else {
      struct sockaddr_in any = {};
      any.sin_family = AF_INET;
      rc = bind(s->fd, reinterpret_cast<struct sockaddr*>(&any), sizeof(any));
    }
    if (rc != 0) ThrowNativeError(env, NativeErrorKind::kSocket, "bind UDP socket", errno, netns);
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok) ThrowNativeError(env, NativeErrorKind::kSocket, "open UDP socket", EINVAL, "no event loop");
    rc = uv_poll_init(loop, &s->poll, s->fd);
    if (rc != 0) ThrowNativeError(env, NativeErrorKind::kSocket, "open UDP socket", -rc, "uv_poll_init");
    s->poll.data = s;
    s->polling = true;
    uv_unref(reinterpret_cast<uv_handle_t*>(&s->poll));
    rc = uv_poll_start(&s->poll, UV_READABLE, OnReadable);
    if (rc != 0) ThrowNativeError(env, NativeErrorKind::kSocket, "open UDP socket", -rc, "uv_poll_start");
  } catch (...) {
    CloseSocket(s);
    throw;
  }
  uint32_t id = nextSocketId++;
  sockets[id] = s;
  return Napi::Number::New(env, id);
}

UdpSocket* Find(const Napi::CallbackInfo& info) {
  auto it = sockets.find(ArgU32(info, 0, "socketId"));
  if (it == sockets.end()) ThrowNativeError(info.Env(), NativeErrorKind::kSocket, "use UDP socket", EBADF, "closed");
  return it->second;
}

// udpSocketSend(id, address, port, data): one datagram, without blocking.
Napi::Value UdpSocketSend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  UdpSocket* s = Find(info);
  std::string address = ArgString(info, 1, "address");
  uint32_t port = ArgU32(info, 2, "port");
  Napi::Buffer<uint8_t> data = ArgBuffer(info, 3, "data");
  struct sockaddr_storage to = {};
  socklen_t toLen = 0;
  struct in_addr v4 = {};
  bool valid = port != 0 && port <= 65535;
  bool ipv4 = inet_pton(AF_INET, address.c_str(), &v4) == 1;
  if (s->family == AF_INET6) {
    auto* in6 = reinterpret_cast<struct sockaddr_in6*>(&to);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(port));
    if (ipv4) {
      // ::ffff:a.b.c.d, the v4-mapped form an IPv6 socket sends IPv4 to.
      in6->sin6_addr.s6_addr[10] = 0xff;
      in6->sin6_addr.s6_addr[11] = 0xff;
      memcpy(&in6->sin6_addr.s6_addr[12], &v4, sizeof(v4));
    } else {
      valid = valid && inet_pton(AF_INET6, address.c_str(), &in6->sin6_addr) == 1;
    }
    toLen = sizeof(*in6);
  } else {
    auto* in = reinterpret_cast<struct sockaddr_in*>(&to);
    in->sin_family = AF_INET;
    in->sin_port = htons(static_cast<uint16_t>(port));
    in->sin_addr = v4;
    valid = valid && ipv4;
    toLen = sizeof(*in);
  }
  if (!valid)
    throw Napi::TypeError::New(env, std::string("udpSocketSend: not an ") + (s->family == AF_INET6 ? "IPv4 or IPv6" : "IPv4") +
                                        " address and port: " + address + ":" + std::to_string(port));
  ssize_t n = sendto(s->fd, data.Data(), data.Length(), MSG_DONTWAIT, reinterpret_cast<struct sockaddr*>(&to), toLen);
  if (n < 0) ThrowNativeError(env, NativeErrorKind::kSocket, "send UDP datagram", errno, address + ":" + std::to_string(port));
  return env.Undefined();
}

// udpSocketReceive(id) -> the datagrams waiting now, as the callback would get them: for a caller that
// must see them before it goes on (after its event loop was held up, timers run before the poll).
Napi::Value UdpSocketReceive(const Napi::CallbackInfo& info) { return Drain(info.Env(), Find(info)); }

// udpSocketClose(id) -> whether it was open. No datagram is delivered after this returns.
Napi::Value UdpSocketClose(const Napi::CallbackInfo& info) {
  auto it = sockets.find(ArgU32(info, 0, "socketId"));
  if (it == sockets.end()) return Napi::Boolean::New(info.Env(), false);
  UdpSocket* s = it->second;
  sockets.erase(it);
  CloseSocket(s);
  return Napi::Boolean::New(info.Env(), true);
}

}  // namespace

void InitUdpSocket(Napi::Env env, Napi::Object exports) {
  exports.Set("udpSocketOpen", Napi::Function::New(env, UdpSocketOpen));
  exports.Set("udpSocketSend", Napi::Function::New(env, UdpSocketSend));
  exports.Set("udpSocketReceive", Napi::Function::New(env, UdpSocketReceive));
  exports.Set("udpSocketClose", Napi::Function::New(env, UdpSocketClose));
}

}  // namespace strait
