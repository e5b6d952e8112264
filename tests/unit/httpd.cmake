# src/httpd: a real server on 127.0.0.1, libcurl as the client (tests/unit/test-httpd.c); OpenSSL makes
# the client certificates and tells the TLS version a handshake used.
find_package(Threads REQUIRED)
if(TARGET cliqo_httpd)
    add_executable(test-httpd unit/test-httpd.c)
    target_link_libraries(test-httpd PRIVATE cliqo_httpd PkgConfig::CURL PkgConfig::OPENSSL PkgConfig::CMOCKA
                          Threads::Threads)
    add_test(NAME unit.httpd COMMAND test-httpd)
    set_tests_properties(unit.httpd PROPERTIES LABELS unit TIMEOUT 120)
endif()
