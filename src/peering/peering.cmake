# Peering support library (docs/peering.md): identities and names, tokens and the failed-attempt
# limiter, the auth endpoint's PKI and CA pin, its JSON bodies, and the kubeconfig credential.
# Pure functions: no event loop, no network. resources.c is the table of cliqo's API kinds.
cliqo_module(cliqo_peering
             SOURCES peering/identity.c peering/token.c peering/pki.c peering/wire.c peering/idkey.c
                     peering/kubeconfig_out.c peering/resources.c peering/objects.c
             DEPS cliqo_kube_api cliqo_kube_config cliqo_kube_names PkgConfig::OPENSSL PkgConfig::JANSSON)
