# The object reflectors (bench/reflect.sh): two local clusters, reflect-driver (tests/e2e/reflect/) between them,
# RSS per reflected ConfigMap and Secret, time from an update at home to the copy on the provider. The program
# keeps its target's name (bin/bench-reflect-bin), as bench-broadcaster does. Use the release preset for figures.
if(TARGET cliqo_kube_api AND TARGET reflect-driver)
    add_executable(bench-reflect-bin bench-reflect.c)
    set_target_properties(bench-reflect-bin PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/bin)
    target_link_libraries(bench-reflect-bin PRIVATE cliqo_kube_api)
    set(BENCH_REFLECT_ARGS "" CACHE STRING "Options for bench/reflect.sh (e.g. --objects 5000 --updates 500)")
    separate_arguments(bench_reflect_args UNIX_COMMAND "${BENCH_REFLECT_ARGS}")
    add_custom_target(bench-reflect
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/reflect.sh --cliqoctl $<TARGET_FILE:cliqoctl>
                --driver $<TARGET_FILE:reflect-driver> --bench $<TARGET_FILE:bench-reflect-bin> ${bench_reflect_args}
        DEPENDS cliqoctl reflect-driver bench-reflect-bin
        USES_TERMINAL)
endif()
