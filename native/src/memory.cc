// Memory the process holds but no longer uses, handed back to the kernel: V8's heap collected in full as
// on a system low on memory (which also shrinks the young generation), then glibc's free pages released
// (the backing stores that collection freed among them). An agent that parsed and applied a spec of
// 100,000 NatMappings otherwise keeps the heap that grew meanwhile for as long as it idles.
#include <malloc.h>
#include <v8.h>

#include "addon.h"

namespace strait {
namespace {

Napi::Value ReleaseMemory(const Napi::CallbackInfo& info) {
  v8::Isolate::GetCurrent()->LowMemoryNotification();
  malloc_trim(0);
  return info.Env().Undefined();
}

}  // namespace

void InitMemory(Napi::Env env, Napi::Object exports) {
  exports.Set("releaseMemory", Napi::Function::New(env, ReleaseMemory));
}

}  // namespace strait
