/* The discovery module of cliqo-agent (docs/discovery.md), for the module table (agent/modules.c):
 * LAN announcement and browsing over mDNS, WAN browsing of SearchDomains over unicast DNS-SD, the
 * ForeignClusters of what is found, and the trust and join policy. Acts only while leading. */
#ifndef CLIQO_DISCOVERY_MODULE_H
#define CLIQO_DISCOVERY_MODULE_H

#include "agent/agent.h"

int disc_init(struct agent *a);
int disc_start(struct agent *a);
void disc_stop(struct agent *a);
void disc_fini(struct agent *a);
#define AGENT_MODULE_DISCOVERY                                                                     \
    {                                                                                              \
        "discovery", disc_init, disc_start, disc_stop, disc_fini, NULL                             \
    }

#endif
