{
  "targets": [
    {
      "target_name": "strait",
      "sources": [
        "native/src/addon.cc",
        "native/src/errors.cc",
        "native/src/object.cc",
        "native/src/map.cc",
        "native/src/program.cc",
        "native/src/tc.cc",
        "native/src/btf.cc",
        "native/src/netns.cc",
        "native/src/probe.cc",
        "native/src/netlink.cc",
        "native/src/netlink-route.cc",
        "native/src/netlink-xfrm.cc",
        "native/src/nftables.cc",
        "native/src/netlink-monitor.cc",
        "native/src/memory.cc",
        "native/src/udp-socket.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-Wno-missing-field-initializers", "<!@(pkg-config --cflags libbpf libmnl libnftables)"],
      "cflags_cc!": ["-fno-exceptions"],
      "libraries": ["<!@(pkg-config --libs libbpf libmnl libnftables)", "-lelf", "-lz"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"]
    }
  ]
}
