# The kubelet API (src/kubeletapi/): the SPDY/3.1 codec and sessions, and the HTTP, query, route,
# option, chunked-body and remotecommand parsers. Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(kla-spdy cliqo_kubeletapi_proto)
cliqo_fuzzer(kla-http cliqo_kubeletapi_proto)
