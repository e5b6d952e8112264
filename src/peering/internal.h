/* peering/internal: helpers shared by the files of src/peering/ only. */
#ifndef CLIQO_PEERING_INTERNAL_H
#define CLIQO_PEERING_INTERNAL_H

#include <jansson.h>

/* Dumps `j` as compact JSON into a new x_malloc'd string. 0, -ENOMEM or -EINVAL. */
int peer__json_dump(const json_t *j, char **ret);

#endif
