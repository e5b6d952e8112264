# The virtual kubelet (src/virtualkubelet/): the virtual node of a provider, embedded in the agent or
# run standalone (`cliqo-agent virtual-kubelet`), its namespace mapping and reflectors, and the
# provider's NamespaceMap controller. Agent code, except the pure translations (podxlate.c: pods,
# mapxlate.c: the namespace mapping), a library of their own for unit tests and fuzzing.
cliqo_module(cliqo_vkxlate SOURCES virtualkubelet/podxlate.c virtualkubelet/mapxlate.c
             DEPS cliqo_offloading PkgConfig::JANSSON)
set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/vk.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/nsmapping.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/pods.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/ctl_namespacemap.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/standalone.c)
if(TARGET cliqo_vkxlate)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_vkxlate)
endif()
# The object reflectors (Services, EndpointSlices, ConfigMaps, Secrets) join vk.c's table of
# reflectors when their source is in the tree.
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/reflect_objects.c)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES
                 ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/reflect_objects.c)
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/reflect_filter.c)
        set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES
                     ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/reflect_filter.c)
    endif()
    set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/vk.c PROPERTIES
                                COMPILE_DEFINITIONS CLIQO_VK_OBJECT_REFLECTORS=1)
endif()
