# Offloading (docs/offloading.md): nsof.c is the pure part of NamespaceOffloading (strategies, the
# cluster selector, the remote namespace's name), shared by the offloading module, the pod webhook and
# the virtual kubelets. No event loop.
cliqo_module(cliqo_offloading SOURCES offloading/nsof.c DEPS PkgConfig::OPENSSL PkgConfig::JANSSON)
