# Embeds the deployment manifests into the programs (cliqoctl install needs no files at runtime).
# Included at the end of src/CMakeLists.txt. Defines the static library cliqo_manifests:
#   #include "deploy/manifests.h"   ->   cliqo_manifests[], cliqo_manifests_count
# The C source is generated at build time (deploy/embed-manifests.cmake) from the YAML files below, in an
# order that applies cleanly: CRDs, namespace, RBAC, ServiceAccount, ClusterConfig, Services, Deployment, the
# per-node DaemonSet.
include_guard(GLOBAL)

set(CLIQO_DEPLOY_DIR ${CMAKE_CURRENT_LIST_DIR})
file(GLOB cliqo_crd_manifests RELATIVE ${CLIQO_DEPLOY_DIR} CONFIGURE_DEPENDS ${CLIQO_DEPLOY_DIR}/crds/*.yaml)
list(SORT cliqo_crd_manifests)
set(CLIQO_MANIFESTS ${cliqo_crd_manifests} namespace.yaml rbac.yaml serviceaccount.yaml clusterconfig.yaml
    service.yaml deployment.yaml node.yaml)

# Every manifest must be embedded: a YAML file added under deploy/ but not listed above fails the configure.
file(GLOB_RECURSE cliqo_all_yaml RELATIVE ${CLIQO_DEPLOY_DIR} CONFIGURE_DEPENDS ${CLIQO_DEPLOY_DIR}/*.yaml)
list(REMOVE_ITEM cliqo_all_yaml kustomization.yaml)
# deploy/broker/ is cliqo-broker's, applied on a broker's cluster only (kubectl apply -k deploy/broker/), never by
# cliqoctl install; e2e.broker.deploy checks it.
list(FILTER cliqo_all_yaml EXCLUDE REGEX "^broker/")
foreach(f ${cliqo_all_yaml})
    if(NOT f IN_LIST CLIQO_MANIFESTS)
        message(FATAL_ERROR "deploy/${f} is not embedded: add it to CLIQO_MANIFESTS in deploy/deploy.cmake")
    endif()
endforeach()

set(cliqo_manifest_inputs "")
foreach(f ${CLIQO_MANIFESTS})
    list(APPEND cliqo_manifest_inputs ${CLIQO_DEPLOY_DIR}/${f})
endforeach()
string(REPLACE ";" "|" cliqo_manifest_arg "${CLIQO_MANIFESTS}")
set(cliqo_manifests_c ${CMAKE_BINARY_DIR}/deploy/manifests.c)
add_custom_command(
    OUTPUT ${cliqo_manifests_c}
    COMMAND ${CMAKE_COMMAND} -DDEPLOY_DIR=${CLIQO_DEPLOY_DIR} "-DFILES=${cliqo_manifest_arg}"
            -DOUT=${cliqo_manifests_c} -P ${CLIQO_DEPLOY_DIR}/embed-manifests.cmake
    DEPENDS ${cliqo_manifest_inputs} ${CLIQO_DEPLOY_DIR}/embed-manifests.cmake
            ${PROJECT_SOURCE_DIR}/cmake/embed-bytes.cmake
    COMMENT "Embedding deploy/ manifests"
    VERBATIM)
add_library(cliqo_manifests STATIC ${cliqo_manifests_c} ${CLIQO_DEPLOY_DIR}/manifests.h)
target_include_directories(cliqo_manifests PUBLIC ${PROJECT_SOURCE_DIR})
