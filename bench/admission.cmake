# The cost of one admission decision without the network (bench/bench-admission.c): the pod webhook's
# decode + patch + answer, the Pod Security check (a typical pod, a pod of 100 containers), and the
# offer enforcement's arithmetic for consumers of 100 to 10,000 pods.
# `ninja bench-admission` runs it (options with BENCH_ADMISSION_ARGS); use the release preset.
if(TARGET cliqo_offloading)
    add_executable(bench-admission-bin bench-admission.c)
    set_target_properties(bench-admission-bin PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/bin)
    target_link_libraries(bench-admission-bin PRIVATE cliqo_offloading cliqo_admission)
    set(BENCH_ADMISSION_ARGS "" CACHE STRING "Options for bench-admission (e.g. --reviews 50000 --pods 1000)")
    separate_arguments(bench_admission_args UNIX_COMMAND "${BENCH_ADMISSION_ARGS}")
    add_custom_target(bench-admission
        COMMAND $<TARGET_FILE:bench-admission-bin> ${bench_admission_args}
        DEPENDS bench-admission-bin
        USES_TERMINAL)
endif()
