// Network namespaces and bpffs: the calling thread enters a namespace for one call and always returns.
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>

#include "addon.h"

namespace strait {

NetnsGuard::NetnsGuard(Napi::Env env, const std::string& path) {
  if (path.empty()) return;
  int target = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) ThrowNativeError(env, NativeErrorKind::kNetns, "open network namespace", errno, path);
  original_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (original_ < 0) {
    int err = errno;
    close(target);
    ThrowNativeError(env, NativeErrorKind::kNetns, "open current network namespace", err);
  }
  int rc = setns(target, CLONE_NEWNET);
  int err = errno;
  close(target);
  if (rc != 0) {
    close(original_);
    original_ = -1;
    ThrowNativeError(env, NativeErrorKind::kNetns, "enter network namespace", err, path);
  }
}

NetnsGuard::~NetnsGuard() {
  if (original_ < 0) return;
  // Returning cannot fail for a namespace we were in a moment ago unless the process is broken; staying
  // in the wrong namespace would be worse than stopping.
  if (setns(original_, CLONE_NEWNET) != 0) abort();
  close(original_);
}

namespace {

Napi::Value IfNameToIndex(const Napi::CallbackInfo& info) {
  std::string name = ArgString(info, 0, "name");
  std::string netns = IsAbsent(info[1]) ? "" : ArgString(info, 1, "netns");
  NetnsGuard guard(info.Env(), netns);
  unsigned index = if_nametoindex(name.c_str());
  if (index == 0) ThrowNativeError(info.Env(), NativeErrorKind::kNetlink, "find interface", errno, name + (netns.empty() ? "" : " in " + netns));
  return Napi::Number::New(info.Env(), index);
}

// interfaces(netns?) -> [{ index, name }]: the links of a namespace, for attaching to every pod veth.
Napi::Value Interfaces(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  NetnsGuard guard(env, netns);
  struct if_nameindex* list = if_nameindex();
  if (list == nullptr) ThrowNativeError(env, NativeErrorKind::kNetlink, "list interfaces", errno, netns);
  Napi::Array out = Napi::Array::New(env);
  uint32_t i = 0;
  for (struct if_nameindex* it = list; it->if_index != 0; it++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("index", it->if_index);
    o.Set("name", it->if_name);
    out[i++] = o;
  }
  if_freenameindex(list);
  return out;
}

constexpr long kBpfFsMagic = 0xcafe4a11;

// Whether `path` is on a bpf filesystem; with `mount` true, mounts one there when it is not.
Napi::Value EnsureBpffs(const Napi::CallbackInfo& info) {
  std::string path = ArgString(info, 0, "path");
  bool doMount = info[1].ToBoolean();
  struct statfs st = {};
  if (statfs(path.c_str(), &st) != 0) ThrowBpfError(info.Env(), "statfs", errno, path);
  if (st.f_type == kBpfFsMagic) return Napi::Boolean::New(info.Env(), true);
  if (!doMount) return Napi::Boolean::New(info.Env(), false);
  if (mount("bpf", path.c_str(), "bpf", 0, "mode=0700") != 0) ThrowBpfError(info.Env(), "mount bpffs", errno, path);
  return Napi::Boolean::New(info.Env(), true);
}

}  // namespace

void InitNetns(Napi::Env env, Napi::Object exports) {
  exports.Set("ifNameToIndex", Napi::Function::New(env, IfNameToIndex));
  exports.Set("interfaces", Napi::Function::New(env, Interfaces));
  exports.Set("ensureBpffs", Napi::Function::New(env, EnsureBpffs));
}

}  // namespace strait
