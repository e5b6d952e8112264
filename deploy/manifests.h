#ifndef CLIQO_DEPLOY_MANIFESTS_H
#define CLIQO_DEPLOY_MANIFESTS_H

/* The deployment manifests of deploy/, embedded at build time (deploy/deploy.cmake; library
 * cliqo_manifests). In apply order: the CRDs (crds/<group>_<plural>.yaml), then namespace.yaml,
 * rbac.yaml, serviceaccount.yaml, clusterconfig.yaml, service.yaml, deployment.yaml. A file may
 * hold several YAML documents separated by "---". The ClusterConfig needs its CRD Established
 * before it can be applied. */

#include <stddef.h>

struct cliqo_manifest {
    const char
        *name; /* path relative to deploy/, e.g. "crds/discovery.liqo.io_foreignclusters.yaml" */
    const char *yaml; /* the file's exact contents, NUL-terminated */
};

extern const struct cliqo_manifest cliqo_manifests[];
extern const size_t cliqo_manifests_count;

#endif
