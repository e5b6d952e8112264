# Advertisement (docs/advertisement.md): what a provider cluster shares with its consumers. share.c is
# the broadcaster's incremental computation over the cluster's nodes and pods: pure, no event loop.
cliqo_module(cliqo_advertisement SOURCES advertisement/share.c
             DEPS cliqo_kube_quantity PkgConfig::JANSSON)
