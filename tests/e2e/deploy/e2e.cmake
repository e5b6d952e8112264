# The deploy group (tests/e2e/deploy/): CRDs and deployment manifests of deploy/ against one real cluster.
# The tests share the cluster (the environment "single", ../e2e.cmake) and each installs and removes the CRDs,
# so they never run concurrently.
cliqo_e2e_group_on(single deploy crds manifests rbac)
set_tests_properties(e2e.deploy.crds e2e.deploy.manifests e2e.deploy.rbac PROPERTIES RESOURCE_LOCK e2e_deploy_cluster)
