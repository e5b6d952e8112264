# Offloading (docs/offloading.md): nsof.c is the pure part of NamespaceOffloading (strategies, the
# cluster selector, the remote namespace's name, the phase), nsof_patch.c the pod webhook's patch,
# nsof_text.c the CLI's selector syntax; shared by the offloading module, the pod webhook, the virtual
# kubelets and cliqoctl. No event loop. podxlate.c is the pure part of pod offloading (home pod ->
# remote pod, status back; library cliqo_podxlate, for unit tests and fuzzing). Agent code:
# ctl_offloading.c is the agent module `offloading`, pods.c the pods reflector every virtual kubelet
# runs, provider_namespacemap.c the provider's agent module `namespacemap`.
cliqo_module(cliqo_offloading SOURCES offloading/nsof.c offloading/nsof_patch.c offloading/nsof_text.c
             DEPS cliqo_kube_names PkgConfig::OPENSSL PkgConfig::JANSSON)
cliqo_module(cliqo_podxlate SOURCES offloading/podxlate.c DEPS PkgConfig::JANSSON)
if(TARGET cliqo_offloading)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES
                 ${CMAKE_CURRENT_SOURCE_DIR}/offloading/ctl_offloading.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/offloading/pods.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/offloading/provider_namespacemap.c)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_offloading cliqo_podxlate)
endif()
