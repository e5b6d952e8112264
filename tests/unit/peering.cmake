# Peering support library (src/peering/): one test program per file.
foreach(t identity token pki wire kubeconfig idkey)
    cliqo_unit_test(peering-${t} cliqo_peering)
endforeach()
# The PKI and kubeconfig tests cross-check with the openssl and kubectl commands (skipped if absent).
if(TEST unit.peering-pki)
    set_tests_properties(unit.peering-pki PROPERTIES TIMEOUT 300)
endif()
