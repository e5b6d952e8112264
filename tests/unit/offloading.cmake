# Offloading (src/offloading/): one test program per file.
cliqo_unit_test(offloading-nsof cliqo_offloading)
cliqo_unit_test(offloading-patch cliqo_offloading)
cliqo_unit_test(offloading-text cliqo_offloading)
