# The informer's store (src/kube/store.c), part of the cliqo_kube_api library.
cliqo_unit_test(kstore cliqo_kube_api)
# Kubernetes' protobuf encoding to JSON text (src/kube/kpb.c): a schema of every rule, and the list splitter.
cliqo_unit_test(kpb cliqo_kube_pb)
# The streaming list splitter (src/kube/liststream.c) the informer decodes lists with.
cliqo_unit_test(liststream cliqo_kube_api)
# The informer's typed records (src/kube/informer.c) with the pod extractor, against a small fake API
# server.
cliqo_unit_test(informer cliqo_kube_api)
if(TARGET test-informer)
    target_link_libraries(test-informer PRIVATE cliqo_kube_pod)
endif()
# The watch in protobuf (src/kube/watch.c, frames of WatchEvents) against a small fake API server.
cliqo_unit_test(watch cliqo_kube_api)
