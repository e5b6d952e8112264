# The kubelet API (src/kubeletapi/, docs/offloading.md "Kubelet API"): logs and exec of virtual and
# simulated nodes. cliqo_kubeletapi_proto holds the pure parsers and codecs (HTTP heads, queries,
# routes, chunked bodies, remotecommand, SPDY/3.1 framing) that the unit tests and fuzz harnesses
# link alone; cliqo_kubeletapi adds the server on the loop, the SubjectAccessReview authoriser and
# the relay.
cliqo_module(cliqo_kubeletapi_proto SOURCES kubeletapi/http.c kubeletapi/spdy.c
             DEPS cliqo_kube_names PkgConfig::JANSSON PkgConfig::ZLIB)
cliqo_module(cliqo_kubeletapi SOURCES kubeletapi/conn.c kubeletapi/tls.c kubeletapi/server.c
             kubeletapi/sar.c kubeletapi/relay.c kubeletapi/service.c
             DEPS cliqo_kubeletapi_proto cliqo_kube_api cliqo_peering PkgConfig::OPENSSL PkgConfig::LIBUV)

# The agent module (module.c, the one listener of the agent's virtual nodes) is agent code.
if(TARGET cliqo_kubeletapi)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/kubeletapi/module.c)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_kubeletapi)
endif()
