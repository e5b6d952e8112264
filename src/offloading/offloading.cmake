# Offloading (docs/offloading.md): nsof.c is the pure part of NamespaceOffloading (strategies, the
# cluster selector, the remote namespace's name, the phase), nsof_patch.c the pod webhook's patch,
# nsof_text.c the CLI's selector syntax; shared by the offloading module, the pod webhook, the virtual
# kubelets and cliqoctl. No event loop. ctl_offloading.c is the agent module `offloading`.
cliqo_module(cliqo_offloading SOURCES offloading/nsof.c offloading/nsof_patch.c offloading/nsof_text.c
             DEPS cliqo_kube_names PkgConfig::OPENSSL PkgConfig::JANSSON)
if(TARGET cliqo_offloading)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/offloading/ctl_offloading.c)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_offloading)
endif()
