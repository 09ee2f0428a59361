// Conflict and gateway detection: ARP probes (RFC 5227) and DAD-style Neighbor Solicitations (RFC 4862)
// sent from inside a pod's network namespace. Each probe runs on a thread of its own that enters the
// namespace and ends with it, so neither the main thread nor a libuv pool thread ever changes namespace,
// and a probe waiting for answers holds no pool thread.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>

#include "addon.h"

namespace strait {

namespace {

using Clock = std::chrono::steady_clock;

struct Probe {
  std::string netns, ifname;
  int family;
  uint8_t address[16];  // 4 or 16 bytes used, network order
  uint32_t tries, timeoutMs;
};

struct Outcome {
  bool answered = false;
  std::string mac;
  int err = 0;  // non-zero: the probe failed in `operation`
  std::string operation, detail;
};

// Thrown inside the probe thread and turned into the promise's rejection.
struct Failure {
  int err;
  std::string operation, detail;
};

[[noreturn]] void Fail(const char* operation, int err, const std::string& detail) {
  throw Failure{err, operation, detail};
}

// What a failed step of the probe was about: its namespace, its interface, or its packet socket.
NativeErrorKind KindOf(const std::string& operation) {
  if (operation.find("network namespace") != std::string::npos) return NativeErrorKind::kNetns;
  if (operation.find("interface") != std::string::npos) return NativeErrorKind::kNetlink;
  return NativeErrorKind::kSocket;
}

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// The CNI main plugin creates the pod's interface down and configures it after IPAM returns: a down
// interface is brought up for the probe and put back down afterwards, leaving the state as found.
class UpForProbe {
 public:
  UpForProbe(int ctl, const std::string& ifname, const std::string& where) : ctl_(ctl), where_(where) {
    std::memset(&ifr_, 0, sizeof(ifr_));
    std::strncpy(ifr_.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    if (ioctl(ctl_, SIOCGIFFLAGS, &ifr_) != 0) Fail("read interface flags", errno, where_);
    if (ifr_.ifr_flags & IFF_UP) return;
    ifr_.ifr_flags |= IFF_UP;
    if (ioctl(ctl_, SIOCSIFFLAGS, &ifr_) != 0) Fail("bring interface up", errno, where_);
    broughtUp_ = true;
  }
  // Puts the interface back down, reporting a failure (the caller was promised the state as found).
  void Restore() {
    if (!broughtUp_) return;
    broughtUp_ = false;
    if (ioctl(ctl_, SIOCGIFFLAGS, &ifr_) != 0) Fail("read interface flags", errno, where_);
    ifr_.ifr_flags &= ~IFF_UP;
    if (ioctl(ctl_, SIOCSIFFLAGS, &ifr_) != 0) Fail("bring interface down", errno, where_);
  }
  // On a failure half-way, still tries to put it back; the first failure is the one reported.
  ~UpForProbe() {
    if (!broughtUp_) return;
    if (ioctl(ctl_, SIOCGIFFLAGS, &ifr_) != 0) return;
    ifr_.ifr_flags &= ~IFF_UP;
    ioctl(ctl_, SIOCSIFFLAGS, &ifr_);
  }
  UpForProbe(const UpForProbe&) = delete;
  UpForProbe& operator=(const UpForProbe&) = delete;

 private:
  int ctl_;
  std::string where_;
  struct ifreq ifr_;
  bool broughtUp_ = false;
};

std::string FormatMac(const uint8_t* mac) {
  char text[18];
  std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
                mac[5]);
  return text;
}

void Put16(uint8_t* at, uint16_t v) {
  at[0] = v >> 8;
  at[1] = v & 0xff;
}

uint16_t Get16(const uint8_t* at) { return static_cast<uint16_t>(at[0] << 8 | at[1]); }

// RFC 5227 probe: broadcast ARP request, sender protocol address 0.0.0.0 so that no neighbour cache
// learns an entry from it (a wrong one poisons the holder's; Spiderpool #4475), target hardware zero.
size_t ArpProbe(uint8_t* f, const uint8_t* mac, const uint8_t* address) {
  std::memset(f, 0, 42);
  std::memset(f, 0xff, 6);
  std::memcpy(f + 6, mac, 6);
  Put16(f + 12, ETH_P_ARP);
  uint8_t* arp = f + 14;
  Put16(arp, ARPHRD_ETHER);
  Put16(arp + 2, ETH_P_IP);
  arp[4] = 6;
  arp[5] = 4;
  Put16(arp + 6, ARPOP_REQUEST);
  std::memcpy(arp + 8, mac, 6);         // sender hardware
  std::memset(arp + 14, 0, 4);          // sender protocol: 0.0.0.0
  std::memcpy(arp + 24, address, 4);    // target protocol (target hardware stays zero)
  return 42;
}

// Any ARP packet whose sender protocol address is the probed one: a reply, or that host's own request.
// Our probes carry 0.0.0.0 there, so they can never match, also when reflected back to us.
bool ArpAnswer(const uint8_t* f, size_t n, const uint8_t* address, std::string& mac) {
  if (n < 42 || Get16(f + 12) != ETH_P_ARP) return false;
  const uint8_t* arp = f + 14;
  if (Get16(arp) != ARPHRD_ETHER || Get16(arp + 2) != ETH_P_IP || arp[4] != 6 || arp[5] != 4) return false;
  if (std::memcmp(arp + 14, address, 4) != 0) return false;
  mac = FormatMac(arp + 8);
  return true;
}

uint16_t Checksum(const uint8_t* data, size_t n, uint32_t sum) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += Get16(data + i);
  if (n & 1) sum += data[n - 1] << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

constexpr uint8_t kIcmpv6 = 58;
constexpr uint8_t kNeighborSolicitation = 135, kNeighborAdvertisement = 136;

// RFC 4862 DAD probe: source ::, to the target's solicited-node group, hop limit 255, no source
// link-layer option: nothing in it lets a receiver create a neighbour entry.
size_t DadProbe(uint8_t* f, const uint8_t* mac, const uint8_t* address) {
  constexpr size_t kIcmpLen = 24;
  std::memset(f, 0, 14 + 40 + kIcmpLen);
  const uint8_t ethDst[6] = {0x33, 0x33, 0xff, address[13], address[14], address[15]};
  std::memcpy(f, ethDst, 6);
  std::memcpy(f + 6, mac, 6);
  Put16(f + 12, ETH_P_IPV6);
  uint8_t* ip = f + 14;
  ip[0] = 0x60;
  Put16(ip + 4, kIcmpLen);
  ip[6] = kIcmpv6;
  ip[7] = 255;
  // source (ip + 8) stays ::
  const uint8_t group[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, address[13], address[14], address[15]};
  std::memcpy(ip + 24, group, 16);
  uint8_t* icmp = ip + 40;
  icmp[0] = kNeighborSolicitation;
  std::memcpy(icmp + 8, address, 16);
  // Pseudo-header: source, destination, upper-layer length, next header; then the message.
  uint32_t sum = 0;
  for (size_t i = 8; i < 40; i += 2) sum += Get16(ip + i);
  sum += kIcmpLen + kIcmpv6;
  Put16(icmp + 2, Checksum(icmp, kIcmpLen, sum));
  return 14 + 40 + kIcmpLen;
}

// A Neighbor Advertisement for the probed address (Linux answers a DAD probe with one to ff02::1): the
// advertiser's MAC is its target link-layer option, else the Ethernet source.
bool NdAnswer(const uint8_t* f, size_t n, const uint8_t* address, std::string& mac) {
  if (n < 14 + 40 + 24 || Get16(f + 12) != ETH_P_IPV6) return false;
  const uint8_t* ip = f + 14;
  if ((ip[0] >> 4) != 6 || ip[6] != kIcmpv6 || ip[7] != 255) return false;
  const uint8_t* icmp = ip + 40;
  size_t icmpLen = std::min<size_t>(Get16(ip + 4), n - 14 - 40);
  if (icmpLen < 24 || icmp[0] != kNeighborAdvertisement || icmp[1] != 0) return false;
  if (std::memcmp(icmp + 8, address, 16) != 0) return false;
  mac = FormatMac(f + 6);
  for (size_t at = 24; at + 8 <= icmpLen && icmp[at + 1] != 0; at += icmp[at + 1] * 8) {
    if (icmp[at] == 2 && icmp[at + 1] == 1) mac = FormatMac(icmp + at + 2);
  }
  return true;
}

// Reads frames until `deadline`; true when one answers the probe.
bool AwaitAnswer(int sock, const Probe& p, Clock::time_point deadline, std::string& mac) {
  uint8_t frame[2048];
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    struct pollfd pfd = {sock, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) Fail("wait for an answer", errno, p.ifname);
    if (ready == 0) continue;
    struct sockaddr_ll from = {};
    socklen_t fromLen = sizeof(from);
    ssize_t n = recvfrom(sock, frame, sizeof(frame), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &fromLen);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) Fail("receive an answer", errno, p.ifname);
    if (from.sll_pkttype == PACKET_OUTGOING) continue;
    bool answer = p.family == 4 ? ArpAnswer(frame, n, p.address, mac) : NdAnswer(frame, n, p.address, mac);
    if (answer) return true;
  }
}

Outcome RunProbe(const Probe& p) {
  std::string where = p.ifname + " in " + p.netns;
  {
    Fd ns(open(p.netns.c_str(), O_RDONLY | O_CLOEXEC));
    if (ns.fd < 0) Fail("open network namespace", errno, p.netns);
    // This thread exists only for this probe: it never has to come back.
    if (setns(ns.fd, CLONE_NEWNET) != 0) Fail("enter network namespace", errno, p.netns);
  }
  unsigned ifindex = if_nametoindex(p.ifname.c_str());
  if (ifindex == 0) Fail("find interface", errno, where);

  Fd ctl(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (ctl.fd < 0) Fail("open control socket", errno, where);
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, p.ifname.c_str(), IFNAMSIZ - 1);
  if (ioctl(ctl.fd, SIOCGIFHWADDR, &ifr) != 0) Fail("read interface address", errno, where);
  if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
    Fail("read interface address", EOPNOTSUPP, where + " is not an Ethernet interface");
  uint8_t mac[6];
  std::memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);

  // Up before the socket is bound: one bound to a down interface holds an ENETDOWN for its first send.
  UpForProbe up(ctl.fd, p.ifname, where);
  const uint16_t proto = p.family == 4 ? ETH_P_ARP : ETH_P_IPV6;
  // Protocol 0 at creation: the socket sees nothing until bound to the one interface and protocol.
  Fd sock(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  if (sock.fd < 0) Fail("open packet socket", errno, where);
  struct sockaddr_ll at = {};
  at.sll_family = AF_PACKET;
  at.sll_protocol = htons(proto);
  at.sll_ifindex = static_cast<int>(ifindex);
  if (bind(sock.fd, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0) Fail("bind packet socket", errno, where);

  uint8_t frame[128];
  size_t len = p.family == 4 ? ArpProbe(frame, mac, p.address) : DadProbe(frame, mac, p.address);
  Outcome out;
  bool sent = false;
  int lastErr = 0;
  for (uint32_t i = 0; i < p.tries && !out.answered; i++) {
    // A failed send is retried at the next try; an answer to an earlier one may still come meanwhile.
    if (send(sock.fd, frame, len, 0) == static_cast<ssize_t>(len)) {
      sent = true;
    } else {
      lastErr = errno;
    }
    out.answered = AwaitAnswer(sock.fd, p, Clock::now() + std::chrono::milliseconds(p.timeoutMs), out.mac);
  }
  up.Restore();
  if (!sent && !out.answered) Fail("send probe", lastErr, where);
  return out;
}

struct ProbeCall {
  Probe probe;
  Outcome outcome;
  Napi::Promise::Deferred deferred;
};

void Settle(Napi::Env env, Napi::Function, ProbeCall* call, void*);
using Completion = Napi::TypedThreadSafeFunction<ProbeCall, void, Settle>;

void Settle(Napi::Env env, Napi::Function, ProbeCall* call, void*) {
  if (env == nullptr) return;  // the environment is going away: nobody waits for the promise
  const Outcome& o = call->outcome;
  if (o.err != 0) {
    call->deferred.Reject(MakeNativeError(env, KindOf(o.operation), o.operation, o.err, o.detail, ""));
    return;
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("answered", o.answered);
  if (o.answered) result.Set("mac", o.mac);
  call->deferred.Resolve(result);
}

// probeAddress(netnsPath, ifname, family 4|6, address, tries, timeoutMs) -> Promise<{ answered, mac? }>.
// Sends up to `tries` probes, each waiting `timeoutMs` for an answer, stopping at the first; rejects
// with the errno of the last failure when no probe could be sent at all.
Napi::Value ProbeAddress(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Probe p;
  p.netns = ArgString(info, 0, "netns");
  p.ifname = ArgString(info, 1, "ifname");
  uint32_t family = ArgU32(info, 2, "family");
  std::string address = ArgString(info, 3, "address");
  p.tries = ArgU32(info, 4, "tries");
  p.timeoutMs = ArgU32(info, 5, "timeoutMs");
  if (family != 4 && family != 6) throw Napi::TypeError::New(env, "argument 'family' must be 4 or 6");
  p.family = static_cast<int>(family);
  if (inet_pton(family == 4 ? AF_INET : AF_INET6, address.c_str(), p.address) != 1)
    throw Napi::TypeError::New(env, "argument 'address' must be an IPv" + std::to_string(family) + " address");
  if (p.netns.empty()) throw Napi::TypeError::New(env, "argument 'netns' must be a namespace path");
  if (p.ifname.empty() || p.ifname.size() >= IFNAMSIZ)
    throw Napi::TypeError::New(env, "argument 'ifname' must be an interface name");
  if (p.tries == 0) throw Napi::TypeError::New(env, "argument 'tries' must be at least 1");

  auto* call = new ProbeCall{p, {}, Napi::Promise::Deferred::New(env)};
  Napi::Promise promise = call->deferred.Promise();
  Completion done = Completion::New(env, "probeAddress", 0, 1, call,
                                    [](Napi::Env, void*, ProbeCall* c) { delete c; });
  try {
    std::thread([call, done]() {
      try {
        call->outcome = RunProbe(call->probe);
      } catch (const Failure& f) {
        call->outcome.err = f.err;
        call->outcome.operation = f.operation;
        call->outcome.detail = f.detail;
      }
      done.BlockingCall();
      done.Release();
    }).detach();
  } catch (const std::system_error& e) {
    done.Release();  // its finalizer deletes the call
    ThrowNativeError(env, NativeErrorKind::kSocket, "start probe thread", e.code().value(), p.ifname + " in " + p.netns);
  }
  return promise;
}

}  // namespace

void InitProbe(Napi::Env env, Napi::Object exports) {
  exports.Set("probeAddress", Napi::Function::New(env, ProbeAddress));
}

}  // namespace strait
