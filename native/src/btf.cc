// BTF layouts of C structs, read from an object file: the test that the TypeScript codecs match the C
// side uses it, so a field added on one side only fails a test.
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "addon.h"

namespace strait {

namespace {

// btfStruct(path, name) -> { size, members: [{ name, offset, size }] } (offsets in bytes).
Napi::Value BtfStruct(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = ArgString(info, 0, "path");
  std::string name = ArgString(info, 1, "name");
  ClearLibbpfLog();
  btf* b = btf__parse(path.c_str(), nullptr);
  if (b == nullptr) ThrowBpfError(env, "parse BTF", errno, path);
  int id = btf__find_by_name_kind(b, name.c_str(), BTF_KIND_STRUCT);
  if (id < 0) {
    btf__free(b);
    ThrowBpfError(env, "find BTF struct", ENOENT, "no struct '" + name + "' in " + path);
  }
  const btf_type* t = btf__type_by_id(b, id);
  Napi::Object out = Napi::Object::New(env);
  out.Set("size", t->size);
  Napi::Array members = Napi::Array::New(env);
  const btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); i++, m++) {
    Napi::Object member = Napi::Object::New(env);
    member.Set("name", btf__name_by_offset(b, m->name_off));
    member.Set("offset", btf_member_bit_offset(t, i) / 8);
    member.Set("size", static_cast<double>(btf__resolve_size(b, m->type)));
    members[i] = member;
  }
  out.Set("members", members);
  btf__free(b);
  return out;
}

// Whether the kernel has its own BTF and accepts BTF from user space (needed for maps with named fields).
Napi::Value ProbeKernelBtf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ClearLibbpfLog();
  btf* vmlinux = btf__load_vmlinux_btf();
  if (vmlinux == nullptr) ThrowBpfError(env, "load kernel BTF", errno);
  btf__free(vmlinux);
  btf* b = btf__new_empty();
  if (b == nullptr) ThrowBpfError(env, "create BTF", errno);
  int err = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
  if (err > 0) err = btf__load_into_kernel(b);
  btf__free(b);
  if (err < 0) ThrowBpfError(env, "load BTF into the kernel", err);
  return Napi::Boolean::New(env, true);
}

}  // namespace

void InitBtf(Napi::Env env, Napi::Object exports) {
  exports.Set("btfStruct", Napi::Function::New(env, BtfStruct));
  exports.Set("probeKernelBtf", Napi::Function::New(env, ProbeKernelBtf));
}

}  // namespace strait
