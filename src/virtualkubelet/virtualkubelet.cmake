# The virtual kubelet (src/virtualkubelet/): the virtual node of a provider, embedded in the agent or
# run standalone (`cliqo-agent virtual-kubelet`), its namespace mapping and object reflectors (the
# pods reflector is pod offloading's, src/offloading/). Agent code, except the pure parts, libraries
# of their own for unit tests and fuzzing: the namespace mapping's translation (mapxlate.c), the
# virtual node's conditions (nodecond.c) and the object reflectors' filters and translations
# (reflect_filter.c, reflect_translate.c).
cliqo_module(cliqo_vkxlate SOURCES virtualkubelet/mapxlate.c virtualkubelet/nodecond.c
             DEPS cliqo_offloading PkgConfig::JANSSON)
cliqo_module(cliqo_vk_reflect SOURCES virtualkubelet/reflect_filter.c virtualkubelet/reflect_translate.c
             DEPS PkgConfig::JANSSON PkgConfig::LIBUV)
set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_vkxlate cliqo_vk_reflect)
set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/vk.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/nsmapping.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/standalone.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/reflect_objects.c)
