# The broker (src/broker/): the catalog's query. Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(broker-catalog cliqo_broker_core)
