# Discovery (src/discovery/): the record codec, the Avahi poll adapter, the mDNS wrapper on real
# sockets (loopback), the c-ares resolver against a local DNS server.
cliqo_unit_test(discovery-record cliqo_discovery_record)
if(TARGET cliqo_discovery_net)
    add_executable(test-discovery-mdns unit/test-discovery-mdns.c)
    target_link_libraries(test-discovery-mdns PRIVATE cliqo_discovery_net PkgConfig::CMOCKA)
    add_test(NAME unit.discovery-mdns COMMAND test-discovery-mdns)
    set_tests_properties(unit.discovery-mdns PROPERTIES LABELS unit TIMEOUT 180)
endif()
