# The virtual kubelet (src/virtualkubelet/): the virtual node of a provider, embedded in the agent or
# run standalone (`cliqo-agent virtual-kubelet`), and the provider's NamespaceMap controller. Agent code.
# The object reflectors' pure part (filters, translation) is a library of its own for tests and fuzzing.
cliqo_module(cliqo_vk_reflect SOURCES virtualkubelet/reflect_filter.c virtualkubelet/reflect_translate.c
             DEPS PkgConfig::JANSSON PkgConfig::LIBUV)
set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_vk_reflect)
set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/vk.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/ctl_namespacemap.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/standalone.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/reflect_objects.c)
