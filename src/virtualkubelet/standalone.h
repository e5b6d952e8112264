/* standalone: the virtual kubelet in a process of its own (`cliqo-agent virtual-kubelet`,
 * Deployment mode, docs/advertisement.md; standalone.c). The virtual kubelet itself is vk.h. */
#ifndef CLIQO_VIRTUALKUBELET_STANDALONE_H
#define CLIQO_VIRTUALKUBELET_STANDALONE_H

/* `cliqo-agent virtual-kubelet ...` (argv[0] is "virtual-kubelet"): runs one virtual kubelet
 * until SIGTERM, or until its Advertisement is deleted and the teardown is over. Returns the exit
 * status (0, 1 runtime failure, 2 bad command line). */
int vk_standalone_main(int argc, char **argv);

#endif
