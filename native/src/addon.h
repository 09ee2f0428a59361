// Shared declarations of the Strait native binding: a thin, synchronous layer over libbpf and the bpf(2)
// syscall. Kernel objects are plain fds and object ids owned by the JavaScript side and released only by
// explicit calls, never by garbage collection.
#pragma once

#include <napi.h>

#include <string>

namespace strait {

// The errno's symbolic name (ENOENT), as a native error's `code`; E<number> for one glibc does not name.
std::string ErrnoName(int err);

// What failed: it names the error's class on the TypeScript side (src/bpf/error.ts), each carrying
// errno, its name as `code`, the operation and what libbpf printed while the operation ran.
enum class NativeErrorKind {
  kBpf,       // the bpf(2) syscall, libbpf, BTF, bpffs, TC attachments: BpfError
  kNetlink,   // rtnetlink and xfrm over netlink, the netlink monitor, interfaces: NetlinkError
  kNftables,  // libnftables: NftablesError
  kNetns,     // opening or entering a network namespace: NetnsError
  kSocket,    // the address probe's packet sockets, the liveness prober's UDP sockets: SocketError
};

// Throws the error of `kind`. `err` may be negative (libbpf style).
[[noreturn]] void ThrowNativeError(Napi::Env env, NativeErrorKind kind, const std::string& operation, int err,
                                   const std::string& detail = "");

// Builds the same error without throwing (for promise rejections and per-change results).
Napi::Object MakeNativeError(Napi::Env env, NativeErrorKind kind, const std::string& operation, int err,
                             const std::string& detail, const std::string& libbpfLog);

[[noreturn]] inline void ThrowBpfError(Napi::Env env, const std::string& operation, int err,
                                       const std::string& detail = "") {
  ThrowNativeError(env, NativeErrorKind::kBpf, operation, err, detail);
}

// libbpf's messages are captured per thread: the log of the current operation is attached to its error.
void ClearLibbpfLog();
std::string TakeLibbpfLog();
void InstallLibbpfPrint();

// Argument helpers that raise TypeErrors naming the argument.
int ArgFd(const Napi::CallbackInfo& info, size_t i, const char* name);
uint32_t ArgU32(const Napi::CallbackInfo& info, size_t i, const char* name);
std::string ArgString(const Napi::CallbackInfo& info, size_t i, const char* name);
Napi::Buffer<uint8_t> ArgBuffer(const Napi::CallbackInfo& info, size_t i, const char* name);
bool IsAbsent(const Napi::Value& v);

// Runs the rest of a scope in another network namespace (by path, e.g. /run/netns/x) and returns to the
// original one when destroyed. An empty path means the current namespace.
class NetnsGuard {
 public:
  NetnsGuard(Napi::Env env, const std::string& path);
  ~NetnsGuard();
  NetnsGuard(const NetnsGuard&) = delete;
  NetnsGuard& operator=(const NetnsGuard&) = delete;

 private:
  int original_ = -1;
};

void InitErrors(Napi::Env env, Napi::Object exports);
void InitObject(Napi::Env env, Napi::Object exports);
void InitMap(Napi::Env env, Napi::Object exports);
void InitProgram(Napi::Env env, Napi::Object exports);
void InitTc(Napi::Env env, Napi::Object exports);
void InitBtf(Napi::Env env, Napi::Object exports);
void InitNetns(Napi::Env env, Napi::Object exports);
void InitProbe(Napi::Env env, Napi::Object exports);
void InitNetlinkRoute(Napi::Env env, Napi::Object exports);
void InitNetlinkXfrm(Napi::Env env, Napi::Object exports);
void InitNftables(Napi::Env env, Napi::Object exports);
void InitNetlinkMonitor(Napi::Env env, Napi::Object exports);
void InitMemory(Napi::Env env, Napi::Object exports);
void InitUdpSocket(Napi::Env env, Napi::Object exports);

}  // namespace strait
