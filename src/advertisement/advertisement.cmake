# Advertisement (docs/advertisement.md): what a provider cluster shares with its consumers. The
# broadcaster's incremental computation over the cluster's nodes and pods is src/offer/share.c (admission
# and the virtual kubelet use it too, so it sits below the features); config.c parses the
# ClusterConfig's sharing and acceptance settings; policy.c validates Advertisements and decides on them;
# offersource.c reads the broker's offer and chooses between it and the cluster's own share.
# Pure, no event loop.
cliqo_module(cliqo_advertisement SOURCES advertisement/config.c advertisement/policy.c
             advertisement/offersource.c
             DEPS cliqo_offer cliqo_kube_quantity cliqo_kube_names cliqo_peering PkgConfig::JANSSON)

# The broadcaster and the advertisement operator are agent modules (src/agent/agent.cmake).
if(TARGET cliqo_advertisement)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES
                 ${CMAKE_CURRENT_SOURCE_DIR}/advertisement/broadcaster.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/advertisement/operator.c)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_advertisement)
endif()
