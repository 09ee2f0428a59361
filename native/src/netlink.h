// What the netlink families share (rtnetlink in netlink-route.cc, xfrm in netlink-xfrm.cc): a socket of
// one protocol in the current namespace, a dump that is re-run when interrupted, and a batch of changes
// sent at once with one result per change.
#pragma once

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include <functional>
#include <string>
#include <vector>

#include "addon.h"

namespace strait {

// Runs a dump request of `protocol` and calls `each` for every message; a dump interrupted by a
// concurrent change (NLM_F_DUMP_INTR) is run again, so the caller sees a consistent table.
void NetlinkDump(Napi::Env env, int protocol, const char* operation, const std::function<void(nlmsghdr*)>& build,
                 const std::function<void(const nlmsghdr*)>& each);

// One change to send, or the reason it was never sent.
struct NetlinkChange {
  std::string operation;
  std::vector<char> message;
  int err = 0;  // set before sending: refused here (no such device, bad address)
  std::string detail;
  bool answered = false;
};

// Sends every change not refused yet, in order, and collects each ACK by sequence number: one result
// per change ((BpfError | null)[]), so a failed one stops nothing else.
Napi::Value NetlinkSend(Napi::Env env, int protocol, std::vector<NetlinkChange>& changes);

// Builds one change's message from its JS object (kind and op already read), or refuses it.
using ChangeBuilder = std::function<void(const Napi::Object& change, const std::string& kind, const std::string& op, NetlinkChange& out)>;

// apply(netns, changes) -> (BpfError | null)[]: builds every change in the namespace, then NetlinkSend.
// `wipe`: the messages hold key material, zeroed however the call ends.
Napi::Value ApplyChanges(const Napi::CallbackInfo& info, int protocol, const ChangeBuilder& build, bool wipe = false);

// change[key] as a string or number; a wrong type throws a TypeError naming `change.key`.
std::string Str(const Napi::Object& o, const char* key);
uint32_t U32(const Napi::Object& o, const char* key, uint32_t fallback = 0);

struct Address {
  int family = 0;
  uint8_t bytes[16] = {};
  unsigned length = 0;  // prefix length for a network
  size_t size() const { return family == AF_INET6 ? 16 : 4; }
};

// An address, or a network with /len; false when it is neither.
bool ParseAddress(const std::string& text, bool prefix, Address& out);

// Starts `change`'s message (room bytes, a request asking for an ACK); fills `change.err` instead with
// Refuse, so the change is reported without being sent.
nlmsghdr* Header(NetlinkChange& change, uint16_t type, uint16_t flags, size_t room = 1024);
void Refuse(NetlinkChange& change, const std::string& what);

}  // namespace strait
