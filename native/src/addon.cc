#include "addon.h"

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) {
  strait::InstallLibbpfPrint();
  strait::InitErrors(env, exports);
  strait::InitObject(env, exports);
  strait::InitMap(env, exports);
  strait::InitProgram(env, exports);
  strait::InitTc(env, exports);
  strait::InitBtf(env, exports);
  strait::InitNetns(env, exports);
  strait::InitProbe(env, exports);
  strait::InitNetlinkRoute(env, exports);
  strait::InitNetlinkXfrm(env, exports);
  strait::InitNftables(env, exports);
  strait::InitNetlinkMonitor(env, exports);
  strait::InitMemory(env, exports);
  strait::InitUdpSocket(env, exports);
  return exports;
}

NODE_API_MODULE(NODE_GYP_MODULE_NAME, InitAddon)
