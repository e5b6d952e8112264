# Logs and exec of an offloaded pod (bench/kubelet-offloaded.sh): exec and logs round trips and exec stream
# throughput through the consumer's agent (kubelet API and relay) versus directly on the provider, the delay of
# `logs -f`, and the consumer agent's RSS per open stream. Use the release preset for the RSS figure; pass
# options with BENCH_KUBELET_ARGS (e.g. --samples 5 --mib 8 --streams 20).
if(TARGET cliqo-agent AND TARGET cliqo-nodesim)
    set(BENCH_KUBELET_ARGS "" CACHE STRING "Options for bench/kubelet-offloaded.sh")
    separate_arguments(bench_kubelet_args UNIX_COMMAND "${BENCH_KUBELET_ARGS}")
    add_custom_target(bench-kubelet
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/kubelet-offloaded.sh --cliqoctl $<TARGET_FILE:cliqoctl>
                --agent $<TARGET_FILE:cliqo-agent> --nodesim $<TARGET_FILE:cliqo-nodesim>
                ${bench_kubelet_args}
        DEPENDS cliqoctl cliqo-agent cliqo-nodesim
        USES_TERMINAL)
endif()
