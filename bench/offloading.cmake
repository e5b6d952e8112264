# Offloading (bench/offloading.sh): Deployments of 100, 1,000 and 10,000 pods offloaded through the virtual
# node versus created directly on the provider (controllers unthrottled, one half of the CPUs per cluster), the
# requests per offloaded pod each way, the added latency of a single pod, and the consumer agent's RSS. Use the
# release preset (the RSS figure is for a release build); pass options with BENCH_OFFLOADING_ARGS (e.g.
# --sizes "100 1000" --samples 5).
if(TARGET cliqo-agent AND TARGET cliqo-nodesim)
    set(BENCH_OFFLOADING_ARGS "" CACHE STRING "Options for bench/offloading.sh")
    separate_arguments(bench_offloading_args UNIX_COMMAND "${BENCH_OFFLOADING_ARGS}")
    add_custom_target(bench-offloading
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/offloading.sh --cliqoctl $<TARGET_FILE:cliqoctl>
                --agent $<TARGET_FILE:cliqo-agent> --nodesim $<TARGET_FILE:cliqo-nodesim>
                ${bench_offloading_args}
        DEPENDS cliqoctl cliqo-agent cliqo-nodesim
        USES_TERMINAL)
endif()
