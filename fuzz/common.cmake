# Common library (src/common/): the bounded JSON decoder. Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(jsonb cliqo_common)
