# The virtual kubelet's object reflectors (src/virtualkubelet/reflect_filter.c, reflect_translate.c): filters
# from the ClusterConfig, home objects to copies, the provider's objects through the comparison. Included from
# fuzz/CMakeLists.txt.
cliqo_fuzzer(vk-reflect cliqo_vk_reflect)
