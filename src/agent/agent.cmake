# cliqo-agent and the libraries it is made of (included by src/CMakeLists.txt).

# HTTP(S) servers on libmicrohttpd, driven by a libuv loop (src/httpd/).
# GnuTLS directly too: the certificate callback that lets a TLS server change its certificate.
pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls)
cliqo_module(cliqo_httpd SOURCES httpd/httpd.c DEPS PkgConfig::MHD PkgConfig::GNUTLS PkgConfig::LIBUV)
# Prometheus text exposition (src/metrics/metrics.c).
cliqo_module(cliqo_metrics SOURCES metrics/metrics.c)
if(TARGET cliqo_metrics)
    target_link_libraries(cliqo_metrics PUBLIC m)
endif()
# How long the event loop's iterations keep it busy (src/common/looplag.c): the agent's loop metrics.
cliqo_module(cliqo_looplag SOURCES common/looplag.c DEPS PkgConfig::LIBUV)

# The agent's core (everything but main), so that unit tests can link it.
# The peering controllers (src/peering/controllers/, docs/peering.md) are agent modules: they are built
# into the core with the module table that lists them.
if(TARGET cliqo_httpd AND TARGET cliqo_metrics AND TARGET cliqo_looplag AND TARGET cliqo_kube_api AND TARGET cliqo_peering)
    # Controllers of other subsystems (src/<module>/<module>.cmake, included before this file) add
    # their sources and libraries to the global properties CLIQO_AGENT_SOURCES and CLIQO_AGENT_LIBS.
    get_property(agent_extra_sources GLOBAL PROPERTY CLIQO_AGENT_SOURCES)
    get_property(agent_extra_libs GLOBAL PROPERTY CLIQO_AGENT_LIBS)
    add_library(cliqo_agent_core STATIC agent/agent.c agent/config.c agent/modules.c
                agent/identity.c agent/peers.c agent/ctl.c peering/controllers/options.c
                peering/controllers/auth.c peering/controllers/outgoing.c peering/controllers/incoming.c
                ${agent_extra_sources})
    target_link_libraries(cliqo_agent_core PUBLIC cliqo_common cliqo_kube_api cliqo_kube_names cliqo_httpd cliqo_metrics cliqo_looplag
                          cliqo_peering PkgConfig::OPENSSL ${agent_extra_libs})

    add_executable(cliqo-agent agent/main.c)
    target_link_libraries(cliqo-agent PRIVATE cliqo_agent_core)
    install(TARGETS cliqo-agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
