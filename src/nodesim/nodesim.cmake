# cliqo-nodesim: the node simulator (docs/nodesim.md). The pure parts (flags, IP allocation, object
# builders) form cliqo_nodesim_core so that unit tests link them without the daemon.
add_library(cliqo_nodesim_core STATIC nodesim/config.c nodesim/ipam.c nodesim/build.c nodesim/logs.c
            nodesim/shell.c)
target_link_libraries(cliqo_nodesim_core PUBLIC cliqo_common cliqo_kube_quantity PkgConfig::JANSSON)

add_executable(cliqo-nodesim nodesim/main.c nodesim/node.c nodesim/pod.c nodesim/health.c
               nodesim/kubelet.c)
target_link_libraries(cliqo-nodesim PRIVATE cliqo_nodesim_core cliqo_kube_api cliqo_kube_quantity
                      cliqo_kubeletapi)

install(TARGETS cliqo-nodesim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
