# The virtual kubelet's pure translations (src/virtualkubelet/podxlate.c, mapxlate.c).
cliqo_unit_test(vk-pods cliqo_vkxlate)
