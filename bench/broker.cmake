# The broker's catalog (bench/broker-catalog.sh): GET /api/clusters for 1,000 ForeignClusters, cliqo-broker
# against nginx serving the same bytes, both with wrk in one run; the broker's RSS. `ninja bench-broker-catalog`.
if(TARGET cliqo-broker AND TARGET cliqoctl)
    add_custom_target(bench-broker-catalog
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/broker-catalog.sh --cliqoctl $<TARGET_FILE:cliqoctl>
                --broker $<TARGET_FILE:cliqo-broker>
        DEPENDS cliqo-broker cliqoctl
        USES_TERMINAL)
endif()
