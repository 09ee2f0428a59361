// BPF objects: open (phase 1: inspect and adjust), load (phase 2: verify and create kernel objects, async),
// close. Objects live in a table keyed by a small integer; JavaScript holds the id and must close it.
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <vector>

#include "addon.h"

namespace strait {

namespace {

struct ObjectEntry {
  bpf_object* obj;
  bool loading;
  bool loaded;
};

std::map<uint32_t, ObjectEntry> objects;
uint32_t nextObjectId = 1;

ObjectEntry& GetObject(const Napi::CallbackInfo& info, const char* operation, bool mustBeOpenOnly) {
  uint32_t id = ArgU32(info, 0, "objectId");
  auto it = objects.find(id);
  if (it == objects.end()) ThrowBpfError(info.Env(), operation, EBADF, "no open BPF object with id " + std::to_string(id));
  if (it->second.loading) ThrowBpfError(info.Env(), operation, EBUSY, "the object is being loaded");
  if (mustBeOpenOnly && it->second.loaded)
    ThrowBpfError(info.Env(), operation, EALREADY, "the object is already loaded; this is only possible before load");
  return it->second;
}

bpf_map* FindMap(const Napi::CallbackInfo& info, bpf_object* obj, const std::string& name, const char* operation) {
  bpf_map* map = bpf_object__find_map_by_name(obj, name.c_str());
  if (map == nullptr) ThrowBpfError(info.Env(), operation, ENOENT, "the object has no map named '" + name + "'");
  return map;
}

// Where a `const volatile` (or other global) variable lives: its internal map and its offset there.
struct GlobalVar {
  bpf_map* map;
  std::string name;
  uint32_t offset;
  uint32_t size;
  bool readOnly;
};

std::vector<GlobalVar> GlobalVars(bpf_object* obj) {
  std::vector<GlobalVar> vars;
  const btf* btf = bpf_object__btf(obj);
  if (btf == nullptr) return vars;
  bpf_map* map;
  bpf_object__for_each_map(map, obj) {
    if (!bpf_map__is_internal(map)) continue;
    const btf_type* sec = btf__type_by_id(btf, bpf_map__btf_value_type_id(map));
    if (sec == nullptr || !btf_is_datasec(sec)) continue;
    const btf_var_secinfo* vsi = btf_var_secinfos(sec);
    for (int i = 0; i < btf_vlen(sec); i++, vsi++) {
      const btf_type* var = btf__type_by_id(btf, vsi->type);
      if (var == nullptr || !btf_is_var(var)) continue;
      vars.push_back({map, btf__name_by_offset(btf, var->name_off), vsi->offset, vsi->size,
                      (bpf_map__map_flags(map) & BPF_F_RDONLY_PROG) != 0});
    }
  }
  return vars;
}

Napi::Value ObjectOpen(const Napi::CallbackInfo& info) {
  std::string path = ArgString(info, 0, "path");
  std::string pinRoot = IsAbsent(info[1]) ? "" : ArgString(info, 1, "pinRoot");
  LIBBPF_OPTS(bpf_object_open_opts, opts);
  if (!pinRoot.empty()) opts.pin_root_path = pinRoot.c_str();
  ClearLibbpfLog();
  bpf_object* obj = bpf_object__open_file(path.c_str(), &opts);
  if (obj == nullptr) ThrowBpfError(info.Env(), "open object", errno, path);
  uint32_t id = nextObjectId++;
  objects[id] = {obj, false, false};
  return Napi::Number::New(info.Env(), id);
}

Napi::Value ObjectMaps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ObjectEntry& entry = GetObject(info, "list maps", false);
  Napi::Array out = Napi::Array::New(env);
  bpf_map* map;
  uint32_t i = 0;
  bpf_object__for_each_map(map, entry.obj) {
    Napi::Object m = Napi::Object::New(env);
    m.Set("name", bpf_map__name(map));
    m.Set("type", static_cast<uint32_t>(bpf_map__type(map)));
    m.Set("keySize", bpf_map__key_size(map));
    m.Set("valueSize", bpf_map__value_size(map));
    m.Set("maxEntries", bpf_map__max_entries(map));
    m.Set("flags", bpf_map__map_flags(map));
    m.Set("internal", bpf_map__is_internal(map));
    const char* pin = bpf_map__pin_path(map);
    m.Set("pinPath", pin ? Napi::Value(Napi::String::New(env, pin)) : env.Null());
    m.Set("fd", bpf_map__fd(map));
    out[i++] = m;
  }
  return out;
}

Napi::Value ObjectPrograms(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ObjectEntry& entry = GetObject(info, "list programs", false);
  Napi::Array out = Napi::Array::New(env);
  bpf_program* prog;
  uint32_t i = 0;
  bpf_object__for_each_program(prog, entry.obj) {
    Napi::Object p = Napi::Object::New(env);
    p.Set("name", bpf_program__name(prog));
    p.Set("section", bpf_program__section_name(prog));
    p.Set("type", static_cast<uint32_t>(bpf_program__type(prog)));
    p.Set("fd", bpf_program__fd(prog));
    out[i++] = p;
  }
  return out;
}

Napi::Value ObjectGlobals(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ObjectEntry& entry = GetObject(info, "list globals", false);
  Napi::Array out = Napi::Array::New(env);
  uint32_t i = 0;
  for (const GlobalVar& v : GlobalVars(entry.obj)) {
    Napi::Object g = Napi::Object::New(env);
    g.Set("name", v.name);
    g.Set("map", bpf_map__name(v.map));
    g.Set("offset", v.offset);
    g.Set("size", v.size);
    g.Set("readOnly", v.readOnly);
    out[i++] = g;
  }
  return out;
}

void ObjectSetGlobal(const Napi::CallbackInfo& info) {
  const char* op = "set global";
  ObjectEntry& entry = GetObject(info, op, true);
  std::string name = ArgString(info, 1, "name");
  Napi::Buffer<uint8_t> value = ArgBuffer(info, 2, "value");
  for (const GlobalVar& v : GlobalVars(entry.obj)) {
    if (v.name != name) continue;
    if (value.Length() != v.size)
      ThrowBpfError(info.Env(), op, EINVAL,
                    "global '" + name + "' is " + std::to_string(v.size) + " bytes, value is " +
                        std::to_string(value.Length()));
    size_t size = 0;
    const void* current = bpf_map__initial_value(v.map, &size);
    if (current == nullptr || v.offset + v.size > size)
      ThrowBpfError(info.Env(), op, EINVAL, "global '" + name + "' has no initial value");
    std::vector<uint8_t> data(static_cast<const uint8_t*>(current), static_cast<const uint8_t*>(current) + size);
    memcpy(data.data() + v.offset, value.Data(), v.size);
    int err = bpf_map__set_initial_value(v.map, data.data(), size);
    if (err) ThrowBpfError(info.Env(), op, err, name);
    return;
  }
  ThrowBpfError(info.Env(), op, ENOENT, "the object has no global variable named '" + name + "'");
}

void ObjectSetMaxEntries(const Napi::CallbackInfo& info) {
  ObjectEntry& entry = GetObject(info, "set max_entries", true);
  bpf_map* map = FindMap(info, entry.obj, ArgString(info, 1, "mapName"), "set max_entries");
  int err = bpf_map__set_max_entries(map, ArgU32(info, 2, "maxEntries"));
  if (err) ThrowBpfError(info.Env(), "set max_entries", err, bpf_map__name(map));
}

void ObjectSetPinPath(const Napi::CallbackInfo& info) {
  ObjectEntry& entry = GetObject(info, "set pin path", true);
  bpf_map* map = FindMap(info, entry.obj, ArgString(info, 1, "mapName"), "set pin path");
  std::string path = IsAbsent(info[2]) ? "" : ArgString(info, 2, "path");
  int err = bpf_map__set_pin_path(map, path.empty() ? nullptr : path.c_str());
  if (err) ThrowBpfError(info.Env(), "set pin path", err, bpf_map__name(map));
}

void ObjectReuseMapFd(const Napi::CallbackInfo& info) {
  ObjectEntry& entry = GetObject(info, "reuse map", true);
  bpf_map* map = FindMap(info, entry.obj, ArgString(info, 1, "mapName"), "reuse map");
  ClearLibbpfLog();
  int err = bpf_map__reuse_fd(map, ArgFd(info, 2, "fd"));
  if (err) ThrowBpfError(info.Env(), "reuse map", err, bpf_map__name(map));
}

// libbpf refuses an incompatible pinned map with a bare EINVAL; we name the map and the field instead.
std::string PinnedMapMismatch(bpf_map* map) {
  const char* path = bpf_map__pin_path(map);
  if (path == nullptr || access(path, F_OK) != 0) return "";
  int fd = bpf_obj_get(path);
  if (fd < 0) return "";
  bpf_map_info info = {};
  uint32_t len = sizeof(info);
  int err = bpf_obj_get_info_by_fd(fd, &info, &len);
  close(fd);
  if (err) return "";
  struct Field {
    const char* name;
    uint64_t pinned, wanted;
  } fields[] = {
      {"type", info.type, bpf_map__type(map)},
      {"key_size", info.key_size, bpf_map__key_size(map)},
      {"value_size", info.value_size, bpf_map__value_size(map)},
      {"max_entries", info.max_entries, bpf_map__max_entries(map)},
      {"map_flags", info.map_flags, bpf_map__map_flags(map)},
  };
  for (const Field& f : fields) {
    if (f.pinned != f.wanted)
      return std::string("map '") + bpf_map__name(map) + "' pinned at " + path + " has " + f.name + " " +
             std::to_string(f.pinned) + " but the object declares " + std::to_string(f.wanted) +
             "; unpin it (or remove the node's state) to let a new one be created";
  }
  return "";
}

class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, uint32_t id, bpf_object* obj)
      : Napi::AsyncWorker(env), id_(id), obj_(obj), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    ClearLibbpfLog();
    bpf_map* map;
    bpf_object__for_each_map(map, obj_) {
      detail_ = PinnedMapMismatch(map);
      if (!detail_.empty()) {
        err_ = EINVAL;
        return;
      }
    }
    err_ = bpf_object__load(obj_);
    log_ = TakeLibbpfLog();
  }

  void OnOK() override {
    auto it = objects.find(id_);
    if (it != objects.end()) {
      it->second.loading = false;
      it->second.loaded = err_ == 0;
    }
    if (err_ == 0) {
      deferred_.Resolve(Env().Undefined());
    } else {
      deferred_.Reject(MakeNativeError(Env(), NativeErrorKind::kBpf, "load object", err_, detail_, log_));
    }
  }

 private:
  uint32_t id_;
  bpf_object* obj_;
  int err_ = 0;
  std::string detail_;
  std::string log_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value ObjectLoad(const Napi::CallbackInfo& info) {
  ObjectEntry& entry = GetObject(info, "load object", true);
  entry.loading = true;
  auto* worker = new LoadWorker(info.Env(), info[0].As<Napi::Number>().Uint32Value(), entry.obj);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

void ObjectClose(const Napi::CallbackInfo& info) {
  ObjectEntry& entry = GetObject(info, "close object", false);
  bpf_object__close(entry.obj);
  objects.erase(info[0].As<Napi::Number>().Uint32Value());
}

}  // namespace

void InitObject(Napi::Env env, Napi::Object exports) {
  exports.Set("objectOpen", Napi::Function::New(env, ObjectOpen));
  exports.Set("objectMaps", Napi::Function::New(env, ObjectMaps));
  exports.Set("objectPrograms", Napi::Function::New(env, ObjectPrograms));
  exports.Set("objectGlobals", Napi::Function::New(env, ObjectGlobals));
  exports.Set("objectSetGlobal", Napi::Function::New(env, ObjectSetGlobal));
  exports.Set("objectSetMaxEntries", Napi::Function::New(env, ObjectSetMaxEntries));
  exports.Set("objectSetPinPath", Napi::Function::New(env, ObjectSetPinPath));
  exports.Set("objectReuseMapFd", Napi::Function::New(env, ObjectReuseMapFd));
  exports.Set("objectLoad", Napi::Function::New(env, ObjectLoad));
  exports.Set("objectClose", Napi::Function::New(env, ObjectClose));
}

}  // namespace strait
