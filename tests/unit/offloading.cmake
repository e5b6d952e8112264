# Offloading (src/offloading/): one test program per file.
cliqo_unit_test(offloading-nsof cliqo_offloading)
