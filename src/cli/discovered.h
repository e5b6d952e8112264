/* cli/discovered: what `cliqoctl discovered`, `status` and `add` share about discovered clusters
 * (cmd_discovered.c, docs/discovery.md). */
#ifndef CLIQO_CLI_DISCOVERED_H
#define CLIQO_CLI_DISCOVERED_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli/kube.h"
#include "peering/identity.h"
#include "peering/pki.h"

/* A ForeignCluster discovery found (status.discovery, or labelled LAN / WAN). */
bool dcli_is_discovered(const json_t *fc);
/* The discovered clusters among fcs as a table (a line saying there are none otherwise). */
void dcli_print_table(const json_t *fcs, FILE *f);
/* One discovered cluster as JSON (a new reference); all those of fcs as an array. */
json_t *dcli_json(const json_t *fc);
json_t *dcli_json_array(const json_t *fcs);

/* What `cliqoctl add <discovered cluster>` takes from discovery. */
struct dcli_target {
    char fc_name[256];
    char id[PEER_NAME_MAX + 1];
    char url[2049];
    char type[32];                              /* the discovery-type label to keep */
    char announced_hash[PEER_CA_HASH_LEN + 16]; /* "" when none was announced */
    char trust[32];
};
/* Finds a discovered cluster by ForeignCluster name, cluster ID, or (unique) announced name.
 * Returns 0, or a negative errno with the reason in k->err. */
int dcli_resolve(struct cli_kube *k, const char *arg, struct dcli_target *ret);
/* 1 when two "sha256:<hex>" hashes are the same (case-insensitive), else 0. */
int dcli_hash_equal(const char *a, const char *b);
/* Writes Secret remote-auth-<id> with the token and the expected CA hash only, for a cluster to
 * be joined when discovery finds it (autojoin). Returns 0 or a negative errno (k->err). */
int dcli_stage(struct cli_kube *k, const char *id, const char *token, const char *hash);

#endif
