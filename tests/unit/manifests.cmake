# The embedded deployment manifests (deploy/deploy.cmake, library cliqo_manifests), and the static checks of
# deploy/Dockerfile (tests/e2e/deploy/dockerfile.sh; skipped until the cliqo-agent target exists).
cliqo_unit_test(manifests cliqo_manifests)
if(TARGET test-manifests)
    target_compile_definitions(test-manifests PRIVATE CLIQO_DEPLOY_DIR="${PROJECT_SOURCE_DIR}/deploy")
endif()
if(TARGET cliqo-agent)
    set(cliqo_agent_bin $<TARGET_FILE:cliqo-agent>)
else()
    set(cliqo_agent_bin "")
endif()
add_test(NAME deploy.dockerfile COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/e2e/deploy/dockerfile.sh ${PROJECT_SOURCE_DIR}
         ${cliqo_agent_bin})
set_tests_properties(deploy.dockerfile PROPERTIES LABELS unit TIMEOUT 180 SKIP_RETURN_CODE 77)
