// What the netlink families share (netlink.h): the socket, dumps, a batch of changes with one result per
// change, and the pieces every change is built from.
#include "netlink.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <exception>
#include <memory>

namespace strait {
namespace {

// Large enough for any one dump message (the kernel fills up to 32 KiB per read).
constexpr size_t kReceiveBuffer = 64 * 1024;
// Bytes of messages per sendmsg, at most; and the receive buffer each ACK is charged (one small skb each,
// whatever its 36 bytes): a send never has more changes than the receive buffer holds ACKs, or the kernel
// drops ACKs and the socket reports ENOBUFS.
constexpr size_t kSendChunk = 64 * 1024;
constexpr int kAckCharge = 2048;
constexpr int kWantedReceiveBuffer = 4 << 20;

struct SocketCloser {
  void operator()(mnl_socket* s) const { mnl_socket_close(s); }
};
using Socket = std::unique_ptr<mnl_socket, SocketCloser>;

const char* ProtocolName(int protocol) { return protocol == NETLINK_XFRM ? "xfrm netlink" : "rtnetlink"; }

// A socket of `protocol` in the current namespace (the caller holds a NetnsGuard), asking for the
// kernel's error text (extended ACK) without the echoed request. The kernel answers within the send
// (rtnetlink and xfrm handle a request in the sender's context), so a read that waits seconds means an
// answer was lost: it fails with EAGAIN instead of blocking the process.
Socket OpenSocket(Napi::Env env, int protocol) {
  Socket nl(mnl_socket_open2(protocol, SOCK_CLOEXEC));
  if (!nl) ThrowNativeError(env, NativeErrorKind::kNetlink, std::string("open ") + ProtocolName(protocol) + " socket", errno);
  if (mnl_socket_bind(nl.get(), 0, MNL_SOCKET_AUTOPID) < 0) ThrowNativeError(env, NativeErrorKind::kNetlink, std::string("bind ") + ProtocolName(protocol) + " socket", errno);
  int on = 1;
  mnl_socket_setsockopt(nl.get(), NETLINK_EXT_ACK, &on, sizeof(on));
  mnl_socket_setsockopt(nl.get(), NETLINK_CAP_ACK, &on, sizeof(on));
  timeval timeout = {5, 0};
  setsockopt(mnl_socket_get_fd(nl.get()), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return nl;
}

// How many changes one send may carry: the receive buffer, enlarged when the process may (CAP_NET_ADMIN
// passes net.core.rmem_max), divided by what one ACK is charged.
size_t AcksPerSend(mnl_socket* nl) {
  int size = kWantedReceiveBuffer;
  int fd = mnl_socket_get_fd(nl);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  socklen_t len = sizeof(size);
  if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, &len) != 0) size = 0;
  return std::max<size_t>(16, static_cast<size_t>(size) / kAckCharge);
}


}  // namespace

void NetlinkDump(Napi::Env env, int protocol, const char* operation, const std::function<void(nlmsghdr*)>& build,
                 const std::function<void(const nlmsghdr*)>& each) {
  std::vector<char> buf(kReceiveBuffer);
  for (int attempt = 0;; attempt++) {
    Socket nl = OpenSocket(env, protocol);
    nlmsghdr* req = mnl_nlmsg_put_header(buf.data());
    req->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req->nlmsg_seq = static_cast<uint32_t>(time(nullptr));
    build(req);
    uint32_t seq = req->nlmsg_seq, portid = mnl_socket_get_portid(nl.get());
    if (mnl_socket_sendto(nl.get(), req, req->nlmsg_len) < 0) ThrowNativeError(env, NativeErrorKind::kNetlink, operation, errno);
    // A C++ exception must not unwind through libmnl's C frames: it is carried out and thrown here.
    struct Run {
      const std::function<void(const nlmsghdr*)>* each;
      std::exception_ptr error;
    } run{&each, nullptr};
    auto callback = [](const nlmsghdr* nlh, void* data) -> int {
      auto* r = static_cast<Run*>(data);
      try {
        (*r->each)(nlh);
      } catch (...) {
        r->error = std::current_exception();
        return MNL_CB_STOP;
      }
      return MNL_CB_OK;
    };
    int rc;
    do {
      ssize_t n = mnl_socket_recvfrom(nl.get(), buf.data(), buf.size());
      if (n < 0) ThrowNativeError(env, NativeErrorKind::kNetlink, operation, errno);
      rc = mnl_cb_run(buf.data(), n, seq, portid, callback, &run);
      if (run.error) std::rethrow_exception(run.error);
    } while (rc > MNL_CB_STOP);
    if (rc == MNL_CB_STOP) return;
    if (errno != EINTR || attempt >= 3) ThrowNativeError(env, NativeErrorKind::kNetlink, operation, errno);
  }
}


std::string Str(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsString()) throw Napi::TypeError::New(o.Env(), std::string("change.") + key + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}


uint32_t U32(const Napi::Object& o, const char* key, uint32_t fallback) {
  Napi::Value v = o.Get(key);
  if (IsAbsent(v)) return fallback;
  if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string("change.") + key + " must be a number");
  return v.As<Napi::Number>().Uint32Value();
}

// An address, or a network with /len; false when it is neither.
bool ParseAddress(const std::string& text, bool prefix, Address& out) {
  std::string addr = text;
  out.length = 0;
  if (prefix) {
    size_t slash = text.find('/');
    if (slash == std::string::npos) return false;
    addr = text.substr(0, slash);
    out.length = static_cast<unsigned>(atoi(text.c_str() + slash + 1));
  }
  out.family = addr.find(':') == std::string::npos ? AF_INET : AF_INET6;
  if (inet_pton(out.family, addr.c_str(), out.bytes) != 1) return false;
  return out.length <= out.size() * 8;
}


nlmsghdr* Header(NetlinkChange& p, uint16_t type, uint16_t flags, size_t room) {
  p.message.assign(room, 0);
  nlmsghdr* nlh = mnl_nlmsg_put_header(p.message.data());
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  return nlh;
}

void Refuse(NetlinkChange& p, const std::string& what) {
  p.err = EINVAL;
  p.detail = what;
}


namespace {

// The kernel's error text from an extended ACK, if it sent one.
std::string AckMessage(const nlmsghdr* nlh) {
  if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS)) return "";
  std::string text;
  mnl_attr_parse(nlh, sizeof(nlmsgerr), [](const nlattr* attr, void* data) -> int {
    if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG) *static_cast<std::string*>(data) = mnl_attr_get_str(attr);
    return MNL_CB_OK;
  }, &text);
  return text;
}


}  // namespace

Napi::Value NetlinkSend(Napi::Env env, int protocol, std::vector<NetlinkChange>& changes) {
  Socket nl = OpenSocket(env, protocol);
  uint32_t portid = mnl_socket_get_portid(nl.get());
  size_t perSend = AcksPerSend(nl.get());
  uint32_t base = static_cast<uint32_t>(time(nullptr)) << 8;
  std::vector<char> out(kSendChunk + 1024), in(kReceiveBuffer);
  size_t next = 0;
  while (next < changes.size()) {
    // Fill one chunk with the next messages, then read until every one of them is answered.
    size_t used = 0, first = next, waiting = 0;
    for (; next < changes.size(); next++) {
      NetlinkChange& p = changes[next];
      if (p.err) continue;
      auto* nlh = reinterpret_cast<nlmsghdr*>(p.message.data());
      if (used > 0 && (used + nlh->nlmsg_len > kSendChunk || waiting == perSend)) break;
      nlh->nlmsg_seq = base + static_cast<uint32_t>(next);
      memcpy(out.data() + used, nlh, nlh->nlmsg_len);
      used += NLMSG_ALIGN(nlh->nlmsg_len);
      waiting++;
    }
    if (used == 0) break;
    if (mnl_socket_sendto(nl.get(), out.data(), used) < 0) ThrowNativeError(env, NativeErrorKind::kNetlink, std::string("send ") + ProtocolName(protocol) + " changes", errno);
    while (waiting > 0) {
      ssize_t n = mnl_socket_recvfrom(nl.get(), in.data(), in.size());
      if (n < 0) ThrowNativeError(env, NativeErrorKind::kNetlink, std::string("receive ") + ProtocolName(protocol) + " acknowledgements", errno, std::to_string(waiting) + " unanswered");
      int len = static_cast<int>(n);
      for (auto* nlh = reinterpret_cast<const nlmsghdr*>(in.data()); mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
        if (nlh->nlmsg_type != NLMSG_ERROR || nlh->nlmsg_pid != portid) continue;
        size_t index = nlh->nlmsg_seq - base;
        if (index < first || index >= next || changes[index].answered || changes[index].err) continue;
        auto* e = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
        changes[index].answered = true;
        changes[index].err = -e->error;
        if (e->error) changes[index].detail = AckMessage(nlh);
        waiting--;
      }
    }
  }

  Napi::Array results = Napi::Array::New(env, changes.size());
  for (size_t i = 0; i < changes.size(); i++) {
    const NetlinkChange& p = changes[i];
    results[i] = p.err ? Napi::Value(MakeNativeError(env, NativeErrorKind::kNetlink, p.operation, p.err, p.detail, "")) : env.Null();
  }
  return results;
}

Napi::Value ApplyChanges(const Napi::CallbackInfo& info, int protocol, const ChangeBuilder& build, bool wipe) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  if (!info[1].IsArray()) throw Napi::TypeError::New(env, "argument 'changes' must be an array");
  Napi::Array list = info[1].As<Napi::Array>();
  NetnsGuard guard(env, netns);
  std::vector<NetlinkChange> changes(list.Length());
  // Wiped however this call ends (they may hold keys).
  struct Wipe {
    std::vector<NetlinkChange>& changes;
    bool on;
    ~Wipe() {
      if (on) for (auto& c : changes) explicit_bzero(c.message.data(), c.message.size());
    }
  } wiper{changes, wipe};
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value v = list[i];
    if (!v.IsObject()) throw Napi::TypeError::New(env, "every change must be an object");
    Napi::Object c = v.As<Napi::Object>();
    build(c, Str(c, "kind"), Str(c, "op"), changes[i]);
  }
  return NetlinkSend(env, protocol, changes);
}

}  // namespace strait
