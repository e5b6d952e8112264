# Advertisement (src/advertisement/): one test program per file.
cliqo_unit_test(advertisement-share cliqo_advertisement)
cliqo_unit_test(advertisement-policy cliqo_advertisement)
cliqo_unit_test(advertisement-offersource cliqo_advertisement)
