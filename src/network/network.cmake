# Network support library (src/network/): CIDRs and the pod-CIDR remapping of
# peers; WireGuard keys and its userspace API's text protocol (wguapi.c) and the nftables text of the
# stateless prefix NAT (natrules.c), the routes' rtnetlink messages (routes.c), WireGuard's generic netlink
# messages for the kernel's WireGuard (wgnl.c), the data plane's objects
# (dpobj.c: TunnelEndpoints, the gateway's record), the node mode's routes (noderoutes.c), docs/dataplane.md; whether
# a peer's ForeignCluster lets the networks be connected (peernet.c). Pure functions and a table: no
# event loop, no network.
cliqo_module(cliqo_network SOURCES network/ipam.c network/wguapi.c network/wgnl.c network/natrules.c network/routes.c
             network/peernet.c network/dpobj.c network/noderoutes.c network/nodecidrs.c DEPS PkgConfig::OPENSSL PkgConfig::JANSSON)

# The agent module that exchanges NetworkConfigs and TunnelEndpoints and settles the remapping (network.h).
if(TARGET cliqo_network)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/network/ctl_network.c)
    # The gateway (`cliqo-agent gateway`, gateway.h): wireguard-go, routes and the nftables table.
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/network/gateway.c)
    # What the gateway and the node mode share: the peers served and their blocks (dppeers.h).
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/network/dppeers.c)
    # The per-node mode (`cliqo-agent node`, nodeagent.h): a route per peer's block via the gateway node.
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/network/nodeagent.c)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_network PkgConfig::NFTABLES)
endif()
