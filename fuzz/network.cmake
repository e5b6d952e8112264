# Network support library (src/network/): the CIDR parser, formatter and address translation.
# Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(network-cidr cliqo_network)
# WireGuard's userspace API answers (get, set), keys and endpoints.
cliqo_fuzzer(network-wguapi cliqo_network)
# The kernel WireGuard's generic netlink answers (a get's pages, the family's resolution), read back and rewritten.
cliqo_fuzzer(network-wgnl cliqo_network)
# rtnetlink answers (a dump page, an acknowledgement).
cliqo_fuzzer(network-routes cliqo_network)
# The data plane's objects: a peer's TunnelEndpoint, the peer's NetworkConfig, the gateway's record.
cliqo_fuzzer(network-dpobj cliqo_network)
