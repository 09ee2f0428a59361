// Programs and fds: BPF_PROG_TEST_RUN, program info, raw instruction loads (used by the probe), pinning.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>

#include "addon.h"

namespace strait {

namespace {

// Runs a program on a packet: { data, dataSizeOut, repeat, ctx, flags } -> { retval, duration, data }.
// `duration` is the kernel's mean ns per run over `repeat` runs.
Napi::Value ProgTestRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = ArgFd(info, 0, "fd");
  Napi::Buffer<uint8_t> data = ArgBuffer(info, 1, "data");
  uint32_t dataSizeOut = ArgU32(info, 2, "dataSizeOut");
  uint32_t repeat = ArgU32(info, 3, "repeat");
  Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, dataSizeOut);
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = data.Data(), .data_out = out.Data(),
              .data_size_in = static_cast<uint32_t>(data.Length()), .data_size_out = dataSizeOut,
              .repeat = static_cast<int>(repeat));
  Napi::Buffer<uint8_t> ctx;
  if (!IsAbsent(info[4])) {
    ctx = ArgBuffer(info, 4, "ctx");
    opts.ctx_in = ctx.Data();
    opts.ctx_size_in = static_cast<uint32_t>(ctx.Length());
  }
  if (!IsAbsent(info[5])) opts.flags = ArgU32(info, 5, "flags");
  if (bpf_prog_test_run_opts(fd, &opts) != 0) ThrowBpfError(env, "program test run", errno);
  Napi::Object result = Napi::Object::New(env);
  result.Set("retval", opts.retval);
  result.Set("duration", opts.duration);
  result.Set("data", Napi::Buffer<uint8_t>::Copy(env, out.Data(), opts.data_size_out));
  return result;
}

Napi::Value ProgInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bpf_prog_info pi = {};
  uint32_t len = sizeof(pi);
  if (bpf_obj_get_info_by_fd(ArgFd(info, 0, "fd"), &pi, &len) != 0) ThrowBpfError(env, "program info", errno);
  char tag[2 * BPF_TAG_SIZE + 1];
  for (int i = 0; i < BPF_TAG_SIZE; i++) snprintf(tag + 2 * i, 3, "%02x", pi.tag[i]);
  Napi::Object out = Napi::Object::New(env);
  out.Set("id", pi.id);
  out.Set("name", pi.name);
  out.Set("type", pi.type);
  out.Set("tag", tag);
  return out;
}

// Loads raw instructions (8 bytes each): the feature probe's trivial programs need no object file.
Napi::Value ProgLoadInsns(const Napi::CallbackInfo& info) {
  uint32_t type = ArgU32(info, 0, "type");
  Napi::Buffer<uint8_t> insns = ArgBuffer(info, 1, "insns");
  if (insns.Length() % sizeof(bpf_insn) != 0)
    throw Napi::TypeError::New(info.Env(), "argument 'insns' must be a multiple of 8 bytes");
  LIBBPF_OPTS(bpf_prog_load_opts, opts);
  int fd = bpf_prog_load(static_cast<bpf_prog_type>(type), "strait_probe", "GPL",
                         reinterpret_cast<const bpf_insn*>(insns.Data()), insns.Length() / sizeof(bpf_insn), &opts);
  if (fd < 0) ThrowBpfError(info.Env(), "program load", errno);
  return Napi::Number::New(info.Env(), fd);
}

void ObjPin(const Napi::CallbackInfo& info) {
  std::string path = ArgString(info, 1, "path");
  if (bpf_obj_pin(ArgFd(info, 0, "fd"), path.c_str()) != 0) ThrowBpfError(info.Env(), "pin", errno, path);
}

Napi::Value ObjGet(const Napi::CallbackInfo& info) {
  std::string path = ArgString(info, 0, "path");
  int fd = bpf_obj_get(path.c_str());
  if (fd < 0) ThrowBpfError(info.Env(), "open pinned object", errno, path);
  return Napi::Number::New(info.Env(), fd);
}

Napi::Value FdById(const Napi::CallbackInfo& info) {
  std::string kind = ArgString(info, 0, "kind");
  uint32_t id = ArgU32(info, 1, "id");
  int fd;
  if (kind == "map") fd = bpf_map_get_fd_by_id(id);
  else if (kind == "prog") fd = bpf_prog_get_fd_by_id(id);
  else if (kind == "link") fd = bpf_link_get_fd_by_id(id);
  else throw Napi::TypeError::New(info.Env(), "argument 'kind' must be 'map', 'prog' or 'link'");
  if (fd < 0) ThrowBpfError(info.Env(), "get " + kind + " fd by id", errno, std::to_string(id));
  return Napi::Number::New(info.Env(), fd);
}

void CloseFd(const Napi::CallbackInfo& info) {
  if (close(ArgFd(info, 0, "fd")) != 0) ThrowBpfError(info.Env(), "close", errno);
}

}  // namespace

void InitProgram(Napi::Env env, Napi::Object exports) {
  exports.Set("progTestRun", Napi::Function::New(env, ProgTestRun));
  exports.Set("progInfo", Napi::Function::New(env, ProgInfo));
  exports.Set("progLoadInsns", Napi::Function::New(env, ProgLoadInsns));
  exports.Set("objPin", Napi::Function::New(env, ObjPin));
  exports.Set("objGet", Napi::Function::New(env, ObjGet));
  exports.Set("fdById", Napi::Function::New(env, FdById));
  exports.Set("closeFd", Napi::Function::New(env, CloseFd));
}

}  // namespace strait
