# The virtual kubelet (src/virtualkubelet/podxlate.c, mapxlate.c): remote pods, remote Events and the
# NamespaceMap's status, all from the provider. Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(vk-pods cliqo_vkxlate)
