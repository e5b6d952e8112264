# The virtual kubelet (src/virtualkubelet/): the virtual node of a provider, embedded in the agent or
# run standalone (`cliqo-agent virtual-kubelet`), and the provider's NamespaceMap controller. Agent code.
set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/vk.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/ctl_namespacemap.c
             ${CMAKE_CURRENT_SOURCE_DIR}/virtualkubelet/standalone.c)
