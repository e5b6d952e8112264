# Peering support library (src/peering/): the auth endpoint's JSON decoders and the PKI parsers.
# Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(peering-wire cliqo_peering)
cliqo_fuzzer(peering-pki cliqo_peering)
