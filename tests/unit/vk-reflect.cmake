# The virtual kubelet's object reflectors, their pure part (src/virtualkubelet/reflect_filter.c,
# reflect_translate.c).
cliqo_unit_test(vk-reflect cliqo_vk_reflect)
