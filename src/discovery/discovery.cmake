# Discovery (docs/discovery.md): mDNS / DNS-SD on the LAN (Avahi's embeddable core on the agent's
# loop), unicast DNS-SD on the WAN (c-ares on the loop), and the controller that turns what is found
# into ForeignClusters. Included from src/CMakeLists.txt before agent.cmake.
pkg_check_modules(AVAHI_CORE REQUIRED IMPORTED_TARGET GLOBAL avahi-core)
pkg_check_modules(CARES REQUIRED IMPORTED_TARGET GLOBAL libcares)

# The content of cliqo's records (TXT keys, instance names): pure parsers, fuzzed.
cliqo_module(cliqo_discovery_record SOURCES discovery/record.c DEPS cliqo_peering)
# The network side: Avahi on libuv, the mDNS announcer and browser, the DNS-SD resolver on c-ares.
cliqo_module(cliqo_discovery_net
             SOURCES discovery/avahi_uv.c discovery/mdns.c discovery/dnssd.c
             DEPS cliqo_discovery_record PkgConfig::AVAHI_CORE PkgConfig::CARES PkgConfig::LIBUV)

# The agent module (controller, trust and join policy).
if(TARGET cliqo_discovery_net)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES
                 ${CMAKE_CURRENT_SOURCE_DIR}/discovery/ctl.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/discovery/ctl_lan.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/discovery/ctl_wan.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/discovery/trust.c)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_discovery_net)
endif()
