// Map operations on raw fds. The TypeScript layer checks key and value sizes against the map before
// calling, so these stay one syscall each.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>

#include "addon.h"

namespace strait {

namespace {

Napi::Value MapLookup(const Napi::CallbackInfo& info) {
  int fd = ArgFd(info, 0, "fd");
  Napi::Buffer<uint8_t> key = ArgBuffer(info, 1, "key");
  uint32_t valueSize = ArgU32(info, 2, "valueSize");
  Napi::Buffer<uint8_t> value = Napi::Buffer<uint8_t>::New(info.Env(), valueSize);
  if (bpf_map_lookup_elem(fd, key.Data(), value.Data()) != 0) {
    if (errno == ENOENT) return info.Env().Undefined();
    ThrowBpfError(info.Env(), "map lookup", errno);
  }
  return value;
}

void MapUpdate(const Napi::CallbackInfo& info) {
  int fd = ArgFd(info, 0, "fd");
  Napi::Buffer<uint8_t> key = ArgBuffer(info, 1, "key");
  Napi::Buffer<uint8_t> value = ArgBuffer(info, 2, "value");
  if (bpf_map_update_elem(fd, key.Data(), value.Data(), ArgU32(info, 3, "flags")) != 0)
    ThrowBpfError(info.Env(), "map update", errno);
}

Napi::Value MapDelete(const Napi::CallbackInfo& info) {
  int fd = ArgFd(info, 0, "fd");
  Napi::Buffer<uint8_t> key = ArgBuffer(info, 1, "key");
  if (bpf_map_delete_elem(fd, key.Data()) != 0) {
    if (errno == ENOENT) return Napi::Boolean::New(info.Env(), false);
    ThrowBpfError(info.Env(), "map delete", errno);
  }
  return Napi::Boolean::New(info.Env(), true);
}

Napi::Value MapGetNextKey(const Napi::CallbackInfo& info) {
  int fd = ArgFd(info, 0, "fd");
  uint32_t keySize = ArgU32(info, 2, "keySize");
  Napi::Buffer<uint8_t> next = Napi::Buffer<uint8_t>::New(info.Env(), keySize);
  const void* key = IsAbsent(info[1]) ? nullptr : ArgBuffer(info, 1, "key").Data();
  if (bpf_map_get_next_key(fd, key, next.Data()) != 0) {
    if (errno == ENOENT) return info.Env().Undefined();
    ThrowBpfError(info.Env(), "map get next key", errno);
  }
  return next;
}

// Errors of batch operations carry how many elements were processed before the failure.
[[noreturn]] void ThrowBatchError(Napi::Env env, const char* operation, int err, uint32_t count) {
  Napi::Object error = MakeNativeError(env, NativeErrorKind::kBpf, operation, err, std::to_string(count) + " elements processed", TakeLibbpfLog());
  error.Set("count", count);
  throw Napi::Error(env, error);
}

Napi::Value MapUpdateBatch(const Napi::CallbackInfo& info) {
  int fd = ArgFd(info, 0, "fd");
  Napi::Buffer<uint8_t> keys = ArgBuffer(info, 1, "keys");
  Napi::Buffer<uint8_t> values = ArgBuffer(info, 2, "values");
  uint32_t count = ArgU32(info, 3, "count");
  LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = ArgU32(info, 4, "flags"));
  if (bpf_map_update_batch(fd, keys.Data(), values.Data(), &count, &opts) != 0)
    ThrowBatchError(info.Env(), "map update batch", errno, count);
  return Napi::Number::New(info.Env(), count);
}

Napi::Value MapDeleteBatch(const Napi::CallbackInfo& info) {
  int fd = ArgFd(info, 0, "fd");
  Napi::Buffer<uint8_t> keys = ArgBuffer(info, 1, "keys");
  uint32_t count = ArgU32(info, 2, "count");
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  if (bpf_map_delete_batch(fd, keys.Data(), &count, &opts) != 0)
    ThrowBatchError(info.Env(), "map delete batch", errno, count);
  return Napi::Number::New(info.Env(), count);
}

// One step of a batched walk: `inBatch` is the opaque cursor returned by the previous step (absent to
// start). Returns { count, keys, values, next } where `next` is absent once the walk is complete.
Napi::Value MapLookupBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = ArgFd(info, 0, "fd");
  uint32_t keySize = ArgU32(info, 2, "keySize");
  uint32_t valueSize = ArgU32(info, 3, "valueSize");
  uint32_t count = ArgU32(info, 4, "count");
  // The cursor is a bucket index for hash maps and a key for arrays: size it for either.
  uint32_t cursorSize = keySize > 8 ? keySize : 8;
  Napi::Buffer<uint8_t> next = Napi::Buffer<uint8_t>::New(env, cursorSize);
  Napi::Buffer<uint8_t> keys = Napi::Buffer<uint8_t>::New(env, static_cast<size_t>(keySize) * count);
  Napi::Buffer<uint8_t> values = Napi::Buffer<uint8_t>::New(env, static_cast<size_t>(valueSize) * count);
  void* in = IsAbsent(info[1]) ? nullptr : ArgBuffer(info, 1, "inBatch").Data();
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  bool done = false;
  if (bpf_map_lookup_batch(fd, in, next.Data(), keys.Data(), values.Data(), &count, &opts) != 0) {
    if (errno != ENOENT) ThrowBatchError(env, "map lookup batch", errno, count);
    done = true;
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("count", count);
  out.Set("keys", keys);
  out.Set("values", values);
  out.Set("next", done ? env.Undefined() : Napi::Value(next));
  return out;
}

Napi::Value MapInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = ArgFd(info, 0, "fd");
  bpf_map_info mi = {};
  uint32_t len = sizeof(mi);
  if (bpf_obj_get_info_by_fd(fd, &mi, &len) != 0) ThrowBpfError(env, "map info", errno);
  Napi::Object out = Napi::Object::New(env);
  out.Set("id", mi.id);
  out.Set("name", mi.name);
  out.Set("type", mi.type);
  out.Set("keySize", mi.key_size);
  out.Set("valueSize", mi.value_size);
  out.Set("maxEntries", mi.max_entries);
  out.Set("flags", mi.map_flags);
  out.Set("btfId", mi.btf_id);
  out.Set("btfKeyTypeId", mi.btf_key_type_id);
  out.Set("btfValueTypeId", mi.btf_value_type_id);
  return out;
}

// Creates a map outside any object: the inner maps of map-in-map tables, made by the reconciler.
Napi::Value MapCreate(const Napi::CallbackInfo& info) {
  uint32_t type = ArgU32(info, 0, "type");
  std::string name = ArgString(info, 1, "name");
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = ArgU32(info, 5, "flags"));
  if (!IsAbsent(info[6])) opts.inner_map_fd = ArgFd(info, 6, "innerMapFd");
  int fd = bpf_map_create(static_cast<bpf_map_type>(type), name.c_str(), ArgU32(info, 2, "keySize"),
                          ArgU32(info, 3, "valueSize"), ArgU32(info, 4, "maxEntries"), &opts);
  if (fd < 0) ThrowBpfError(info.Env(), "map create", errno, name);
  return Napi::Number::New(info.Env(), fd);
}

Napi::Value NumPossibleCpus(const Napi::CallbackInfo& info) {
  int n = libbpf_num_possible_cpus();
  if (n < 0) ThrowBpfError(info.Env(), "count possible CPUs", n);
  return Napi::Number::New(info.Env(), n);
}

}  // namespace

void InitMap(Napi::Env env, Napi::Object exports) {
  exports.Set("mapLookup", Napi::Function::New(env, MapLookup));
  exports.Set("mapUpdate", Napi::Function::New(env, MapUpdate));
  exports.Set("mapDelete", Napi::Function::New(env, MapDelete));
  exports.Set("mapGetNextKey", Napi::Function::New(env, MapGetNextKey));
  exports.Set("mapUpdateBatch", Napi::Function::New(env, MapUpdateBatch));
  exports.Set("mapDeleteBatch", Napi::Function::New(env, MapDeleteBatch));
  exports.Set("mapLookupBatch", Napi::Function::New(env, MapLookupBatch));
  exports.Set("mapInfo", Napi::Function::New(env, MapInfo));
  exports.Set("mapCreate", Napi::Function::New(env, MapCreate));
  exports.Set("numPossibleCpus", Napi::Function::New(env, NumPossibleCpus));
}

}  // namespace strait
