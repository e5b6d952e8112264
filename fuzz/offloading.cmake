# Offloading (src/offloading/): NamespaceOffloading specs, cluster selectors, remote names.
# Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(offloading-nsof cliqo_offloading)
cliqo_fuzzer(offloading-selector cliqo_offloading)
