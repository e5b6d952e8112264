# The node simulator's pure parts (src/nodesim/nodesim.h): flags, IP allocation, object builders.
if(TARGET cliqo_nodesim_core)
    add_executable(test-nodesim unit/test-nodesim.c)
    target_link_libraries(test-nodesim PRIVATE cliqo_nodesim_core PkgConfig::CMOCKA)
    add_test(NAME unit.nodesim COMMAND test-nodesim)
    set_tests_properties(unit.nodesim PROPERTIES LABELS unit TIMEOUT 120)
endif()
