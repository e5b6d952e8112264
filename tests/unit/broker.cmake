# The broker (src/broker/): its pure core.
cliqo_unit_test(broker-select cliqo_broker_core)
cliqo_unit_test(broker-aggregate cliqo_broker_core)
cliqo_unit_test(broker-kpi cliqo_broker_core)
cliqo_unit_test(broker-catalog cliqo_broker_core)
cliqo_unit_test(broker-state cliqo_broker_core)
