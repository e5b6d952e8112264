# The object reflectors against two real clusters (tests/e2e/reflect/): reflect-driver runs the Service,
# EndpointSlice, ConfigMap and Secret reflectors of a virtual kubelet without the rest of it (namespace pairs
# from a file instead of a NamespaceMap), so that they are checked with kubectl on both sides before the whole
# offloading flow exists (tests/e2e/offloading/objects.sh). It runs on the offloading group's clusters before
# that group's tests (the same pod CIDR on both, as it needs; three simulated nodes each): one `up` and `down`
# fewer (about 37 s of the lane in a cold run). tests/e2e/offloading/e2e.cmake includes this file after making
# that environment, for that order; the fragments' loop includes it again, to no effect.
include_guard(GLOBAL)
if(TARGET cliqo_agent_core AND TARGET cliqo-agent) # (the offloading group, whose clusters it uses)
    add_executable(reflect-driver ${E2E_DIR}/reflect/reflect-driver.c)
    target_link_libraries(reflect-driver PRIVATE cliqo_agent_core)
    cliqo_e2e_group_on(offloading reflect driver)
    set_property(TEST e2e.reflect.driver APPEND PROPERTY ENVIRONMENT
        "REFLECT_DRIVER=$<TARGET_FILE:reflect-driver>")
endif()
