# The advertisement protocol (src/advertisement/): Advertisement validation, ClusterConfig settings and the
# broadcaster's computation on arbitrary objects. Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(advertisement cliqo_advertisement)
