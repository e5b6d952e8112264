# Admission (src/admission/): the AdmissionReview codec and JSON patches, the certificates' plan, the
# offer arithmetic and its reservations, the Pod Security Standards. One test program per file.
cliqo_unit_test(admission-review cliqo_admission)
cliqo_unit_test(admission-certs cliqo_admission)
cliqo_unit_test(admission-offer cliqo_admission)
cliqo_unit_test(admission-podsec cliqo_admission)
cliqo_unit_test(admission-placement cliqo_admission)
cliqo_unit_test(admission-objects cliqo_admission)
cliqo_unit_test(admission-quota cliqo_admission)
cliqo_unit_test(admission-ledger cliqo_admission)
