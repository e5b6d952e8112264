# Admission webhooks (src/admission/, docs/offloading.md "Admission"): review.c is the AdmissionReview
# codec and JSON patches, certs.c the webhooks' certificates and their rotation plan, offer.c the
# arithmetic of the offer enforcement, ledger.c its reservations, podsec.c the Pod Security Standards,
# placement.c and objects.c the checks of a consumer's pods (placement) and of the Services,
# EndpointSlices and Secrets its credentials write. Pure, no event loop. mod_admission.c is the agent
# module (the HTTPS server, the Secret, the webhook configurations, the offer enforcement, the objects
# webhook), mod_podsec.c the consumers' Pod Security levels it applies.
cliqo_module(cliqo_admission SOURCES admission/review.c admission/certs.c admission/offer.c
             admission/podsec.c admission/placement.c admission/objects.c admission/quota.c
             admission/ledger.c
             DEPS cliqo_offer cliqo_peering cliqo_network PkgConfig::OPENSSL PkgConfig::JANSSON)
if(TARGET cliqo_admission)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/admission/mod_admission.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/admission/mod_podsec.c)
    set_property(GLOBAL APPEND PROPERTY CLIQO_AGENT_LIBS cliqo_admission)
endif()
