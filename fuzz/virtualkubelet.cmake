# What a virtual kubelet reads from the provider (src/offloading/podxlate.c, which the harness
# includes, and src/virtualkubelet/mapxlate.c): remote pods, remote Events and the NamespaceMap's
# status. Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(vk-pods cliqo_vkxlate)
