# The data plane (bench/dataplane.sh): throughput and round-trip time between two pod namespaces of the same pod
# CIDR through cliqo's gateways, through a wireguard-go tunnel configured by hand and over the bare veths,
# alternated in one run; then the time to install 999 more peers and the throughput with them installed. Needs
# root (network namespaces); use the release preset. `ninja bench-dataplane` (options through
# -DBENCH_DATAPLANE_ARGS="--rounds 9 --seconds 5").
if(TARGET cliqo-agent AND TARGET cliqoctl)
    set(BENCH_DATAPLANE_ARGS "" CACHE STRING "Options for bench/dataplane.sh (e.g. --rounds 9 --peers 1000)")
    separate_arguments(bench_dataplane_args UNIX_COMMAND "${BENCH_DATAPLANE_ARGS}")
    add_custom_target(bench-dataplane
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/dataplane.sh --cliqoctl $<TARGET_FILE:cliqoctl>
                --agent $<TARGET_FILE:cliqo-agent> ${bench_dataplane_args}
        DEPENDS cliqo-agent cliqoctl
        USES_TERMINAL)
endif()
