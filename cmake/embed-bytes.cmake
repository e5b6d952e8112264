# Helpers shared by the scripts that compile files into the programs (deploy/embed-manifests.cmake,
# src/broker/dashboard/embed.cmake), which run in script mode (cmake -P) at build time.
#
#   cliqo_embed_bytes(<file> <bytes-var> <len-var>)
#       <bytes-var>: the file's exact bytes as C initialiser lines ("    0x2f,0x2a,...\n", 32 bytes a
#       line, hex so no escaping question arises); <len-var>: their count. An empty file is an error.
#   cliqo_write_if_changed(<out> <text>)
#       writes <text> to <out> only when it differs, so dependents are not rebuilt needlessly.
include_guard(GLOBAL)

function(cliqo_embed_bytes file bytes_var len_var)
    file(READ ${file} hex HEX)
    string(LENGTH "${hex}" n)
    if(n EQUAL 0)
        message(FATAL_ERROR "${file} is empty")
    endif()
    set(bytes "")
    set(off 0)
    while(off LESS n)
        string(SUBSTRING "${hex}" ${off} 64 chunk)
        string(REGEX REPLACE "(..)" "0x\\1," chunk "${chunk}")
        string(APPEND bytes "    ${chunk}\n")
        math(EXPR off "${off} + 64")
    endwhile()
    math(EXPR len "${n} / 2")
    set(${bytes_var} "${bytes}" PARENT_SCOPE)
    set(${len_var} ${len} PARENT_SCOPE)
endfunction()

function(cliqo_write_if_changed out text)
    file(WRITE ${out}.tmp "${text}")
    file(COPY_FILE ${out}.tmp ${out} ONLY_IF_DIFFERENT)
    file(REMOVE ${out}.tmp)
endfunction()
