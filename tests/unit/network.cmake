# Network support library (src/network/): one test program per file.
cliqo_unit_test(network-ipam cliqo_network)
cliqo_unit_test(network-wguapi cliqo_network)
