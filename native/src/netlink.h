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

}  // namespace strait
