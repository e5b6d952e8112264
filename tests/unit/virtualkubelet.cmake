# The pure translations of pod offloading and of the virtual kubelet's namespace mapping
# (src/offloading/podxlate.c, src/virtualkubelet/mapxlate.c).
cliqo_unit_test(vk-pods cliqo_vkxlate)
if(TARGET test-vk-pods)
    target_link_libraries(test-vk-pods PRIVATE cliqo_podxlate)
endif()
# The virtual node's conditions and whether new pods wait for the remapping (nodecond.c).
cliqo_unit_test(vk-nodecond cliqo_vkxlate)
