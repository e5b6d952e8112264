# The object reflectors against two real clusters (tests/e2e/reflect/): reflect-driver runs the Service,
# EndpointSlice, ConfigMap and Secret reflectors of a virtual kubelet without the rest of it (namespace pairs
# from a file instead of a NamespaceMap), so that they are checked with kubectl on both sides before the whole
# offloading flow exists (tests/e2e/offloading/objects.sh). Both clusters have the same pod CIDR and one
# simulated node each.
if(TARGET cliqo_agent_core)
    add_executable(reflect-driver ${E2E_DIR}/reflect/reflect-driver.c)
    target_link_libraries(reflect-driver PRIVATE cliqo_agent_core)
    cliqo_e2e_group(reflect 2 driver)
    set_property(TEST e2e.reflect.up APPEND PROPERTY ENVIRONMENT
        "CLIQO_DEV_NODES=1" "CLIQO_DEV_POD_CIDRS=cluster-1=10.210.0.0/16,cluster-2=10.210.0.0/16")
    set_property(TEST e2e.reflect.driver APPEND PROPERTY ENVIRONMENT
        "REFLECT_DRIVER=$<TARGET_FILE:reflect-driver>")
endif()
