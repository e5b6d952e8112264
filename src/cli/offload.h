/* cli/offload: the OFFLOADING section of `cliqoctl status` (src/cli/cmd_offload.c). */
#ifndef CLIQO_CLI_OFFLOAD_H
#define CLIQO_CLI_OFFLOAD_H

#include <jansson.h>
#include <stdio.h>

#include "cli/kube.h"

/* Every NamespaceOffloading as a summary: [{namespace, name, podOffloadingStrategy,
 * namespaceMappingStrategy, remoteNamespaceName, phase, message, clusters: {<id>: {ready,
 * reason}}}] (a new array; empty when the CRD is not installed). Returns 0 or a negative errno
 * (k->err says why). */
int offload_status_list(struct cli_kube *k, json_t **ret);
/* The human table of that list. */
void offload_status_print(const json_t *list, FILE *f);

#endif
