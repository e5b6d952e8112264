# The broker's dashboard (docs/broker.md, "Dashboard"): the static files of this folder compiled into the
# program. Included from src/broker/broker.cmake. Defines the static library cliqo_broker_dashboard:
#   #include "broker/dashboard.h"   ->   brk_asset_find("/") (index.html), "/app.js", "/style.css"
# embed.cmake writes the C table at build time (exact bytes, content type, a strong ETag from each
# file's SHA-256); a change to any file rebuilds it.
include_guard(GLOBAL)

set(CLIQO_DASHBOARD_DIR ${CMAKE_CURRENT_LIST_DIR})
set(CLIQO_DASHBOARD_FILES index.html app.js style.css)

# Every file of the folder is served, and only those listed: one added but not listed fails the configure.
file(GLOB cliqo_dashboard_all RELATIVE ${CLIQO_DASHBOARD_DIR} CONFIGURE_DEPENDS ${CLIQO_DASHBOARD_DIR}/*)
list(FILTER cliqo_dashboard_all EXCLUDE REGEX "\\.cmake$")
foreach(f ${cliqo_dashboard_all})
    if(NOT f IN_LIST CLIQO_DASHBOARD_FILES)
        message(FATAL_ERROR "src/broker/dashboard/${f} is not embedded: add it to CLIQO_DASHBOARD_FILES in "
                            "src/broker/dashboard/dashboard.cmake")
    endif()
endforeach()

set(cliqo_dashboard_inputs "")
foreach(f ${CLIQO_DASHBOARD_FILES})
    list(APPEND cliqo_dashboard_inputs ${CLIQO_DASHBOARD_DIR}/${f})
endforeach()
string(REPLACE ";" "|" cliqo_dashboard_arg "${CLIQO_DASHBOARD_FILES}")
set(cliqo_dashboard_c ${CMAKE_BINARY_DIR}/broker/dashboard-assets.c)
add_custom_command(
    OUTPUT ${cliqo_dashboard_c}
    COMMAND ${CMAKE_COMMAND} -DDIR=${CLIQO_DASHBOARD_DIR} "-DFILES=${cliqo_dashboard_arg}"
            -DOUT=${cliqo_dashboard_c} -P ${CLIQO_DASHBOARD_DIR}/embed.cmake
    DEPENDS ${cliqo_dashboard_inputs} ${CLIQO_DASHBOARD_DIR}/embed.cmake
            ${PROJECT_SOURCE_DIR}/cmake/embed-bytes.cmake
    COMMENT "Embedding the broker's dashboard (src/broker/dashboard/)"
    VERBATIM)
add_library(cliqo_broker_dashboard STATIC ${cliqo_dashboard_c} ${CLIQO_DASHBOARD_DIR}/../dashboard.c)
target_include_directories(cliqo_broker_dashboard PUBLIC ${PROJECT_SOURCE_DIR}/src)
