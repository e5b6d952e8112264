# Network support library (src/network/): CIDRs and the pod-CIDR remapping of
# peers. Pure functions and a table: no event loop, no network.
cliqo_module(cliqo_network SOURCES network/ipam.c)
