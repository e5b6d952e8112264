# Admission (src/admission/): the AdmissionReview decoder, the answer, the JSON patch applier, and the
# pod webhook's patch built on what it decodes. Included from fuzz/CMakeLists.txt.
cliqo_fuzzer(admission-review cliqo_offloading)
# The Pod Security Standards checked on a pod (src/admission/podsec.c).
cliqo_fuzzer(admission-podsec cliqo_admission)
# The provider's checks of what a consumer's credentials write (placement, Services, EndpointSlices,
# Secrets) and of who writes it.
cliqo_fuzzer(admission-objects cliqo_admission)
