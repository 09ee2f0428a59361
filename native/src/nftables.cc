// nftables in-process through libnftables, instead of an `nft` process per call: commands (nft syntax, or
// nft's JSON document) run as one transaction in a namespace, with the output and errors nft would print
// captured. The context, and the netlink socket it opens, live only for the call, inside NetnsGuard.
#include <nftables/libnftables.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "addon.h"

namespace strait {
namespace {

struct ContextFree {
  void operator()(nft_ctx* ctx) const { nft_ctx_free(ctx); }
};

// What nft prints before an error of JSON input: the input has no lines to point at.
constexpr char kJsonLocation[] = "internal:0:0-0: ";

// nft reports an errno only as its text on the error stream, with the offending line: "Error: Could not
// process rule: <strerror>" from the kernel, "Error: <strerror>; did you mean ..." from its own cache
// checks, "netlink: Error: cache initialization failed: <strerror>" when the kernel refuses its first
// dump: the strerror is one of the first line's ": "-separated parts. Anything else (a syntax error) is
// EINVAL; errno itself is whatever a library call left.
int ErrnoOf(const std::string& text) {
  std::string first = text.substr(0, text.find('\n'));
  first = first.substr(0, first.find(';'));
  for (size_t start = 0; start <= first.size();) {
    size_t end = first.find(": ", start);
    std::string part = first.substr(start, end == std::string::npos ? std::string::npos : end - start);
    for (int err = 1; err < 134; err++)
      if (part == strerror(err)) return err;
    if (end == std::string::npos) break;
    start = end + 2;
  }
  return EINVAL;
}

// nftRun(netns, commands, json, check) -> what nft printed. With `json`, commands that parse as JSON are
// nft's JSON document (anything else is nft syntax, as libnftables falls back) and the output is JSON (a
// listing). `check` validates the commands with the kernel without applying them (nft --check).
Napi::Value NftRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string netns = IsAbsent(info[0]) ? "" : ArgString(info, 0, "netns");
  std::string commands = ArgString(info, 1, "commands");
  bool json = info[2].ToBoolean(), check = info[3].ToBoolean();
  NetnsGuard guard(env, netns);
  std::unique_ptr<nft_ctx, ContextFree> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) ThrowNativeError(env, NativeErrorKind::kNftables, "nft context", ENOMEM);
  if (nft_ctx_buffer_output(ctx.get()) != 0 || nft_ctx_buffer_error(ctx.get()) != 0) ThrowNativeError(env, NativeErrorKind::kNftables, "nft context", ENOMEM);
  if (json) nft_ctx_output_set_flags(ctx.get(), nft_ctx_output_get_flags(ctx.get()) | NFT_CTX_OUTPUT_JSON);
  nft_ctx_set_dry_run(ctx.get(), check);
  errno = 0;
  if (nft_run_cmd_from_buffer(ctx.get(), commands.c_str()) != 0) {
    std::string text = nft_ctx_get_error_buffer(ctx.get());
    for (size_t at; (at = text.find(kJsonLocation)) != std::string::npos;) text.erase(at, sizeof kJsonLocation - 1);
    int err = ErrnoOf(text);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    ThrowNativeError(env, NativeErrorKind::kNftables, check ? "nft check" : "nft", err, text);
  }
  return Napi::String::New(env, nft_ctx_get_output_buffer(ctx.get()));
}

}  // namespace

void InitNftables(Napi::Env env, Napi::Object exports) { exports.Set("nftRun", Napi::Function::New(env, NftRun)); }

}  // namespace strait
