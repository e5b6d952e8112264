# The informer's store (src/kube/store.c), part of the cliqo_kube_api library.
cliqo_unit_test(kstore cliqo_kube_api)
# The streaming list splitter (src/kube/liststream.c) the informer decodes lists with.
cliqo_unit_test(liststream cliqo_kube_api)
