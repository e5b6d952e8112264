# Common library (src/common/): the bounded JSON decoder. Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(jsonb cliqo_common)
# Its fast path to jansson trees (common/jsonfast.c), checked against jansson itself.
cliqo_fuzzer(jsonfast cliqo_common)
# The RFC 3339 parser (timestamps in peers' objects and the kubelet API's sinceTime).
cliqo_fuzzer(rfc3339 cliqo_common)
# The command-line options of every program and the durations they read.
cliqo_fuzzer(opts cliqo_common)
