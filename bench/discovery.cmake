# Discovery (bench/discovery.sh): LAN discovery latency, vanish with and without goodbye, WAN refresh
# latency, and the agent's memory with 100 announced clusters. Needs root (network namespaces);
# `ninja bench-discovery` (options through -DBENCH_DISCOVERY_ARGS="--rounds 10").
if(TARGET cliqo-agent AND TARGET cliqo-mdns-tool)
    set(BENCH_DISCOVERY_ARGS "" CACHE STRING "Options for bench/discovery.sh (e.g. --rounds 10 --announced 100)")
    separate_arguments(bench_discovery_args UNIX_COMMAND "${BENCH_DISCOVERY_ARGS}")
    add_custom_target(bench-discovery
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/discovery.sh --cliqoctl $<TARGET_FILE:cliqoctl>
                --agent $<TARGET_FILE:cliqo-agent> --mdns-tool $<TARGET_FILE:cliqo-mdns-tool>
                ${bench_discovery_args}
        DEPENDS cliqo-agent cliqoctl cliqo-mdns-tool
        USES_TERMINAL)
endif()
