# Discovery (src/discovery/): the record codec, the Avahi poll adapter, the mDNS wrapper on real
# sockets (loopback), the c-ares resolver against a local DNS server.
cliqo_unit_test(discovery-record cliqo_discovery_record)
