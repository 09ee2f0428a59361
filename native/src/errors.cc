#include <bpf/libbpf.h>
#include <string.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <iterator>

#include "addon.h"

namespace strait {

static thread_local std::string libbpfLog;
// The error classes registered by the TypeScript layer, by NativeErrorKind.
static constexpr const char* kindNames[] = {"bpf", "netlink", "nftables", "netns", "socket"};
static Napi::FunctionReference* errorClasses[std::size(kindNames)] = {};

static int CaptureLibbpfPrint(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  // One message can be a whole verifier log (its reason at the end): measure it, then format it all.
  va_list again;
  va_copy(again, args);
  int n = vsnprintf(nullptr, 0, fmt, args);
  if (n > 0) {
    std::string text(n, '\0');
    vsnprintf(text.data(), n + 1, fmt, again);
    libbpfLog += text;
  }
  va_end(again);
  // Verifier logs can be long; keep the last 1 MiB, which holds the rejection reason.
  if (libbpfLog.size() > (1u << 20)) libbpfLog.erase(0, libbpfLog.size() - (1u << 20));
  return n;
}

void InstallLibbpfPrint() { libbpf_set_print(CaptureLibbpfPrint); }
void ClearLibbpfLog() { libbpfLog.clear(); }
std::string TakeLibbpfLog() {
  std::string out;
  out.swap(libbpfLog);
  return out;
}

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : "E" + std::to_string(err);
}

// The verifier log printed by libbpf between its markers, when a program was rejected.
static std::string VerifierLog(const std::string& log) {
  const std::string begin = "-- BEGIN PROG LOAD LOG --\n", end = "-- END PROG LOAD LOG --";
  size_t b = log.find(begin);
  if (b == std::string::npos) return "";
  size_t e = log.find(end, b);
  return log.substr(b + begin.size(), e == std::string::npos ? std::string::npos : e - b - begin.size());
}

// The verifier's last words before its statistics line: why it refused the program.
static std::string VerifierReason(const std::string& verifier) {
  std::string reason;
  size_t start = 0;
  while (start < verifier.size()) {
    size_t end = verifier.find('\n', start);
    if (end == std::string::npos) end = verifier.size();
    std::string line = verifier.substr(start, end - start);
    if (line.rfind("processed ", 0) == 0) break;
    if (!line.empty()) reason = line;
    start = end + 1;
  }
  return reason;
}

// The last line libbpf printed that is not a verifier log line: usually the reason of the failure.
static std::string LastLibbpfLine(const std::string& log) {
  size_t end = log.size();
  while (end > 0) {
    size_t start = log.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string line = log.substr(start, end - start);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    if (line.rfind("libbpf: ", 0) == 0) return line.substr(8);
    if (start == 0) break;
    end = start - 1;
  }
  return "";
}

Napi::Object MakeNativeError(Napi::Env env, NativeErrorKind kind, const std::string& operation, int err,
                             const std::string& detail, const std::string& log) {
  if (err < 0) err = -err;
  std::string message = operation + " failed: " + ErrnoName(err) + " (" + strerror(err) + ")";
  if (!detail.empty()) message += ": " + detail;
  std::string verifier = VerifierLog(log);
  std::string last = LastLibbpfLine(log);
  if (!last.empty()) message += "; libbpf: " + last;
  std::string reason = VerifierReason(verifier);
  if (!reason.empty()) message += "; verifier: " + reason;
  Napi::Object error;
  Napi::FunctionReference* errorClass = errorClasses[static_cast<size_t>(kind)];
  if (errorClass != nullptr) {
    error = errorClass->New({Napi::String::New(env, message)});
  } else {
    error = Napi::Error::New(env, message).Value();
  }
  error.Set("errno", Napi::Number::New(env, err));
  error.Set("code", Napi::String::New(env, ErrnoName(err)));
  error.Set("operation", Napi::String::New(env, operation));
  if (!log.empty()) error.Set("libbpfLog", Napi::String::New(env, log));
  if (!verifier.empty()) error.Set("verifierLog", Napi::String::New(env, verifier));
  return error;
}

void ThrowNativeError(Napi::Env env, NativeErrorKind kind, const std::string& operation, int err,
                      const std::string& detail) {
  throw Napi::Error(env, MakeNativeError(env, kind, operation, err, detail, TakeLibbpfLog()));
}

bool IsAbsent(const Napi::Value& v) { return v.IsUndefined() || v.IsNull(); }

static void TypeFail(const Napi::CallbackInfo& info, size_t i, const char* name, const char* want) {
  (void)i;
  throw Napi::TypeError::New(info.Env(), std::string("argument '") + name + "' must be " + want);
}

int ArgFd(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (!info[i].IsNumber()) TypeFail(info, i, name, "a file descriptor number");
  int64_t fd = info[i].As<Napi::Number>().Int64Value();
  if (fd < 0 || fd > INT32_MAX) TypeFail(info, i, name, "a non-negative file descriptor");
  return static_cast<int>(fd);
}

uint32_t ArgU32(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (!info[i].IsNumber()) TypeFail(info, i, name, "a number");
  double d = info[i].As<Napi::Number>().DoubleValue();
  if (d < 0 || d > 4294967295.0 || d != static_cast<double>(static_cast<uint64_t>(d)))
    TypeFail(info, i, name, "an integer from 0 to 2^32-1");
  return static_cast<uint32_t>(d);
}

std::string ArgString(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (!info[i].IsString()) TypeFail(info, i, name, "a string");
  return info[i].As<Napi::String>().Utf8Value();
}

Napi::Buffer<uint8_t> ArgBuffer(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (!info[i].IsBuffer()) TypeFail(info, i, name, "a Buffer");
  return info[i].As<Napi::Buffer<uint8_t>>();
}

// setErrorClasses({bpf, netlink, nftables, netns, socket}): a constructor for each kind of failure.
static void SetErrorClasses(const Napi::CallbackInfo& info) {
  if (!info[0].IsObject()) throw Napi::TypeError::New(info.Env(), "argument 'errorClasses' must be an object");
  Napi::Object classes = info[0].As<Napi::Object>();
  for (size_t i = 0; i < std::size(kindNames); i++) {
    Napi::Value c = classes.Get(kindNames[i]);
    if (!c.IsFunction()) throw Napi::TypeError::New(info.Env(), std::string("errorClasses.") + kindNames[i] + " must be a constructor");
    delete errorClasses[i];
    errorClasses[i] = new Napi::FunctionReference(Napi::Persistent(c.As<Napi::Function>()));
  }
}

void InitErrors(Napi::Env env, Napi::Object exports) {
  exports.Set("setErrorClasses", Napi::Function::New(env, SetErrorClasses));
}

}  // namespace strait
