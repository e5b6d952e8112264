# The admission side of the security tests (tests/e2e/secadmit/, docs/security.md): the same three clusters
# and shared state as the group security (setup, teardown and common.sh are that group's), base port 19900.
# What a consumer's credentials may create on its provider (Pod Security, placement, Services,
# EndpointSlices, Secrets, namespaces) and what a provider may report back (pod addresses).
if(TARGET cliqo-agent)
    cliqo_e2e_shared_group(secadmit 3 setup podsec placement objects namespaces provider-ips quota teardown)
    set_property(TEST e2e.secadmit.up APPEND PROPERTY ENVIRONMENT "CLIQO_DEV_NODES=1")
endif()
