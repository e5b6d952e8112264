# The broker (src/broker/, docs/broker.md): cliqo-broker, built in steps (issue 20). For now its pure
# core, a library of its own for the unit tests: the selection of providers by policy, toggle and KPIs
# (select.c), the providers' measured KPIs (kpi.c) and the aggregated offer (aggregate.c).
cliqo_module(cliqo_broker_core SOURCES broker/select.c broker/aggregate.c broker/kpi.c
             DEPS cliqo_kube_quantity cliqo_kube_names PkgConfig::JANSSON)
