# The broadcaster's computation (src/offer/share.c) on 5,000 nodes and 150,000 pods built in
# memory: initial computation, cost per event, memory, consistency (bench/bench-broadcaster.c). The
# program's target has its own name so that `ninja bench-broadcaster` runs it; pass options with
# BENCH_BROADCASTER_ARGS. Use an optimised build (the release preset). The program keeps its target's
# name (bin/bench-broadcaster-bin): with OUTPUT_NAME bench-broadcaster, the Ninja generator's alias
# for the executable would take the name `bench-broadcaster` from the custom target. It links the kube
# API library for the informer's store (kstore), through which it feeds the objects as the agent does.
if(TARGET cliqo_advertisement AND TARGET cliqo_kube_api)
    add_executable(bench-broadcaster-bin bench-broadcaster.c)
    set_target_properties(bench-broadcaster-bin PROPERTIES
                          RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/bin)
    target_link_libraries(bench-broadcaster-bin PRIVATE cliqo_advertisement cliqo_kube_api)
    set(BENCH_BROADCASTER_ARGS "" CACHE STRING "Options for bench-broadcaster (e.g. --pods 50000 --rounds 3)")
    separate_arguments(bench_broadcaster_args UNIX_COMMAND "${BENCH_BROADCASTER_ARGS}")
    add_custom_target(bench-broadcaster
        COMMAND $<TARGET_FILE:bench-broadcaster-bin> ${bench_broadcaster_args}
        DEPENDS bench-broadcaster-bin
        USES_TERMINAL)
endif()

# The protocol live (bench/advertisement-live.sh): two local clusters, a provider with 10,000 pods, the delay from
# a pod event on the provider to the consumer's virtual node, and the agents' RSS. Use the release preset.
if(TARGET cliqo-agent AND TARGET bench-informer-bin)
    add_custom_target(bench-advertisement-live
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/advertisement-live.sh --cliqoctl $<TARGET_FILE:cliqoctl>
                --agent $<TARGET_FILE:cliqo-agent> --bench-informer $<TARGET_FILE:bench-informer-bin>
        DEPENDS cliqoctl cliqo-agent bench-informer-bin
        USES_TERMINAL)
endif()
