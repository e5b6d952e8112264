/* The dashboard's files by URL path (broker/dashboard.h); the table is generated at build time. */
#include <string.h>

#include "broker/dashboard.h"

const struct brk_asset *brk_asset_find(const char *path)
{
    if (!path)
        return NULL;
    for (size_t i = 0; i < brk__assets_count; i++)
        if (strcmp(brk__assets[i].path, path) == 0)
            return &brk__assets[i];
    return NULL;
}
