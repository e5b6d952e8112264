/* peernet: the network module's pure per-peer decisions; see peernet.h. */
#include "network/peernet.h"

#include <string.h>

bool pnet_enabled(const json_t *fc)
{
    const json_t *v = json_object_get(json_object_get(fc, "spec"), "networkingEnabled");

    if (json_is_false(v))
        return false;
    return !json_is_string(v) || strcmp(json_string_value(v), "No") != 0;
}
