# The cli group (tests/e2e/cli/): cliqoctl install, uninstall, generate-add-command, add, unpeer and status
# against one real cluster, checked with kubectl. The agent does not run here (install --skip-agent): the
# tests play its part by writing ForeignCluster conditions and finalizers by hand. The tests share the
# cluster (the environment "single", ../e2e.cmake) and install or uninstall cliqo, so they never run
# concurrently. Its base port + 40 .. + 49 are the HTTPS test servers (openssl s_server) of add.sh.
cliqo_e2e_group_on(single cli install generate status unpeer add uninstall)
set_tests_properties(e2e.cli.install e2e.cli.generate e2e.cli.status e2e.cli.unpeer e2e.cli.add e2e.cli.uninstall
                     PROPERTIES RESOURCE_LOCK e2e_cli_cluster)
