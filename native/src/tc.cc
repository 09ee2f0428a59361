// TC attachments: clsact + cls_bpf through libbpf's bpf_tc_* API, and tcx links through bpf_link_create
// (libbpf 1.1 has no tcx API, the kernel does). Every call may run in another network namespace.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <unistd.h>

#include <cerrno>

#include "addon.h"

namespace strait {

namespace {

// Debian's 6.1 UAPI headers predate tcx; the kernel's values are stable ABI.
constexpr uint32_t kBpfTcxIngress = 46;
constexpr uint32_t kBpfTcxEgress = 47;

struct TcTarget {
  std::string netns;
  uint32_t ifindex;
  bool ingress;
};

// Options object: { netns?, ifindex, direction: 'ingress' | 'egress' }.
TcTarget ArgTarget(const Napi::CallbackInfo& info) {
  if (!info[0].IsObject()) throw Napi::TypeError::New(info.Env(), "argument 'target' must be an object");
  Napi::Object o = info[0].As<Napi::Object>();
  Napi::Value netns = o.Get("netns"), ifindex = o.Get("ifindex"), direction = o.Get("direction");
  if (!ifindex.IsNumber()) throw Napi::TypeError::New(info.Env(), "target.ifindex must be a number");
  if (!direction.IsString()) throw Napi::TypeError::New(info.Env(), "target.direction must be 'ingress' or 'egress'");
  std::string dir = direction.As<Napi::String>().Utf8Value();
  if (dir != "ingress" && dir != "egress")
    throw Napi::TypeError::New(info.Env(), "target.direction must be 'ingress' or 'egress', got '" + dir + "'");
  return {IsAbsent(netns) ? "" : netns.As<Napi::String>().Utf8Value(), ifindex.As<Napi::Number>().Uint32Value(),
          dir == "ingress"};
}

uint32_t OptU32(const Napi::Object& o, const char* name, uint32_t fallback) {
  Napi::Value v = o.Get(name);
  return IsAbsent(v) ? fallback : v.As<Napi::Number>().Uint32Value();
}

bpf_tc_hook Hook(const TcTarget& t) {
  bpf_tc_hook hook = {};
  hook.sz = sizeof(hook);
  hook.ifindex = static_cast<int>(t.ifindex);
  hook.attach_point = t.ingress ? BPF_TC_INGRESS : BPF_TC_EGRESS;
  return hook;
}

std::string Where(const TcTarget& t) {
  return std::string(t.ingress ? "ingress" : "egress") + " of ifindex " + std::to_string(t.ifindex) +
         (t.netns.empty() ? "" : " in " + t.netns);
}

// attach(target, { progFd, priority, handle, replace }) -> { priority, handle, progId }.
// Creates the clsact qdisc when missing; an existing one is shared with other users.
Napi::Value TcAttach(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TcTarget t = ArgTarget(info);
  Napi::Object o = info[1].As<Napi::Object>();
  NetnsGuard guard(env, t.netns);
  ClearLibbpfLog();
  bpf_tc_hook hook = Hook(t);
  int err = bpf_tc_hook_create(&hook);
  if (err && err != -EEXIST) ThrowBpfError(env, "create clsact qdisc", err, Where(t));
  bpf_tc_opts opts = {};
  opts.sz = sizeof(opts);
  opts.prog_fd = static_cast<int>(OptU32(o, "progFd", 0));
  opts.priority = OptU32(o, "priority", 0);
  opts.handle = OptU32(o, "handle", 0);
  opts.flags = o.Get("replace").ToBoolean() ? BPF_TC_F_REPLACE : 0;
  err = bpf_tc_attach(&hook, &opts);
  if (err) ThrowBpfError(env, "tc attach", err, Where(t));
  Napi::Object out = Napi::Object::New(env);
  out.Set("priority", opts.priority);
  out.Set("handle", opts.handle);
  out.Set("progId", opts.prog_id);
  return out;
}

// Runs a bpf_tc_* call on the filter slot named by (target, { priority, handle }). A missing clsact
// qdisc (EINVAL) or an empty slot (ENOENT) give `found` false rather than an error.
template <typename Call>
bool OnSlot(const Napi::CallbackInfo& info, const char* operation, Call call, bpf_tc_opts* opts) {
  Napi::Env env = info.Env();
  TcTarget t = ArgTarget(info);
  Napi::Object o = info[1].As<Napi::Object>();
  NetnsGuard guard(env, t.netns);
  ClearLibbpfLog();
  bpf_tc_hook hook = Hook(t);
  *opts = {};
  opts->sz = sizeof(*opts);
  opts->priority = OptU32(o, "priority", 0);
  opts->handle = OptU32(o, "handle", 0);
  int err = call(&hook, opts);
  if (err == -ENOENT || err == -EINVAL) return false;
  if (err) ThrowBpfError(env, operation, err, Where(t));
  return true;
}

// query(target, { priority, handle }) -> program id attached there, or undefined.
Napi::Value TcQuery(const Napi::CallbackInfo& info) {
  bpf_tc_opts opts;
  if (!OnSlot(info, "tc query", bpf_tc_query, &opts)) return info.Env().Undefined();
  return Napi::Number::New(info.Env(), opts.prog_id);
}

// detach(target, { priority, handle }) -> whether a filter was removed.
Napi::Value TcDetach(const Napi::CallbackInfo& info) {
  bpf_tc_opts opts;
  return Napi::Boolean::New(info.Env(), OnSlot(info, "tc detach", bpf_tc_detach, &opts));
}

// Removes the clsact qdisc (and with it every filter on both directions).
Napi::Value TcHookDestroy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TcTarget t = ArgTarget(info);
  NetnsGuard guard(env, t.netns);
  ClearLibbpfLog();
  bpf_tc_hook hook = Hook(t);
  hook.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
  int err = bpf_tc_hook_destroy(&hook);
  if (err == -ENOENT || err == -EINVAL) return Napi::Boolean::New(env, false);
  if (err) ThrowBpfError(env, "destroy clsact qdisc", err, Where(t));
  return Napi::Boolean::New(env, true);
}

// tcxAttach(target, progFd) -> link fd. The link detaches when its last fd closes, so callers pin it.
Napi::Value TcxAttach(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TcTarget t = ArgTarget(info);
  int progFd = ArgFd(info, 1, "progFd");
  NetnsGuard guard(env, t.netns);
  int fd = bpf_link_create(progFd, static_cast<int>(t.ifindex), static_cast<bpf_attach_type>(t.ingress ? kBpfTcxIngress : kBpfTcxEgress), nullptr);
  if (fd < 0) ThrowBpfError(env, "tcx attach", errno, Where(t));
  return Napi::Number::New(env, fd);
}

// The first two words of bpf_link_info's union: {ifindex, attach_type} for tcx links (and the same
// layout for netns links); the 6.1 headers have no tcx member to name them.
struct LinkInfoTarget {
  uint32_t first;
  uint32_t attachType;
};

Napi::Object LinkInfoObject(Napi::Env env, const bpf_link_info& li) {
  const auto* target = reinterpret_cast<const LinkInfoTarget*>(&li.netns);
  Napi::Object out = Napi::Object::New(env);
  out.Set("id", li.id);
  out.Set("type", li.type);
  out.Set("progId", li.prog_id);
  out.Set("ifindex", target->first);
  out.Set("attachType", target->attachType);
  return out;
}

Napi::Value LinkInfo(const Napi::CallbackInfo& info) {
  bpf_link_info li = {};
  uint32_t len = sizeof(li);
  if (bpf_obj_get_info_by_fd(ArgFd(info, 0, "fd"), &li, &len) != 0) ThrowBpfError(info.Env(), "link info", errno);
  return LinkInfoObject(info.Env(), li);
}

// Swaps the program of a link atomically: an upgraded agent replaces its program with no gap.
void LinkUpdate(const Napi::CallbackInfo& info) {
  if (bpf_link_update(ArgFd(info, 0, "linkFd"), ArgFd(info, 1, "progFd"), nullptr) != 0)
    ThrowBpfError(info.Env(), "link update", errno);
}

void LinkDetach(const Napi::CallbackInfo& info) {
  if (bpf_link_detach(ArgFd(info, 0, "fd")) != 0) ThrowBpfError(info.Env(), "link detach", errno);
}

}  // namespace

void InitTc(Napi::Env env, Napi::Object exports) {
  exports.Set("tcAttach", Napi::Function::New(env, TcAttach));
  exports.Set("tcQuery", Napi::Function::New(env, TcQuery));
  exports.Set("tcDetach", Napi::Function::New(env, TcDetach));
  exports.Set("tcHookDestroy", Napi::Function::New(env, TcHookDestroy));
  exports.Set("tcxAttach", Napi::Function::New(env, TcxAttach));
  exports.Set("linkInfo", Napi::Function::New(env, LinkInfo));
  exports.Set("linkUpdate", Napi::Function::New(env, LinkUpdate));
  exports.Set("linkDetach", Napi::Function::New(env, LinkDetach));
}

}  // namespace strait
