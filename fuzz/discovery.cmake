# Discovery (src/discovery/record.c): every parser of record content cliqo writes (TXT keys,
# instance names, full service names, auth URLs, CA hashes). Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(discovery-record cliqo_discovery_record)
