# Network support library (src/network/): one test program per file.
cliqo_unit_test(network-ipam cliqo_network)
cliqo_unit_test(network-wguapi cliqo_network)
# The kernel's WireGuard over generic netlink (wgnl.c): its messages byte by byte, answers read back, malformed
# answers refused. The kernel of the CI machines has no WireGuard: these tests are that path's checks.
cliqo_unit_test(network-wgnl cliqo_network)
# Whether a peer's ForeignCluster lets the networks be connected (spec.networkingEnabled).
cliqo_unit_test(network-peernet cliqo_network)
# The physical nodes' pod CIDRs by node (nodecidrs.c): what the node events change, the covering after them.
cliqo_unit_test(network-nodecidrs cliqo_network)
# The data plane's objects: a peer's TunnelEndpoint as hostile input, keys claimed twice, the NetworkConfig
# read into what the gateway installs.
cliqo_unit_test(network-dpobj cliqo_network)
# The nftables text of the data plane's NAT; its last test gives it to the kernel (libnftables) in a
# network namespace of its own, which needs root, as CI runs.
cliqo_unit_test(network-natrules cliqo_network)
if(TARGET test-network-natrules)
    target_link_libraries(test-network-natrules PRIVATE PkgConfig::NFTABLES)
endif()
# The routes' rtnetlink messages; its last test adds, changes and deletes routes in a network namespace
# of its own (root, as CI runs).
cliqo_unit_test(network-routes cliqo_network)
# The node mode's decisions (`cliqo-agent node`): the gateway node and its address, and the routes a node
# keeps, planned against what a dump found.
cliqo_unit_test(network-noderoutes cliqo_network)
