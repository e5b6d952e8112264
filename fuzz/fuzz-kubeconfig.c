/* libFuzzer harness for the kubeconfig parser and resolver: arbitrary bytes go to kc_load_mem(),
 * once for the current context and once for a named one. No base directory is given, so every
 * file reference is refused and a run never touches the file system.
 *
 * The unit is included rather than only linked (as wireguard-tools' harnesses do) so that it is
 * compiled here with -fsanitize=fuzzer and its branches guide the fuzzer; the library's own copy
 * of these symbols is then never pulled from the archive. */
#include "../src/kube/kubeconfig.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct kc_config *c, int r, const char *err, size_t errlen)
{
    /* err is always terminated; a failure always explains itself and never returns a config. */
    if (strnlen(err, errlen) == errlen)
        __builtin_trap();
    if (r < 0) {
        if (c || err[0] == '\0')
            __builtin_trap();
        return;
    }
    if (r != 0 || !c || !c->server || !c->namespace || !c->context_name || !c->cluster_name ||
        err[0] != '\0')
        __builtin_trap();
    if (strncmp(c->server, "https://", 8) != 0 && strncmp(c->server, "http://", 7) != 0)
        __builtin_trap();
    if (c->server[strlen(c->server) - 1] == '/')
        __builtin_trap();
    if (!namespace_valid(c->namespace))
        __builtin_trap();
    if (!c->cert_pem != !c->key_pem)
        __builtin_trap();
    if (c->insecure_skip_tls_verify && c->ca_pem)
        __builtin_trap();
    if (c->token && !token_valid(c->token, strlen(c->token)))
        __builtin_trap();
    if (c->token_file)
        __builtin_trap(); /* no base directory: file references are refused */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const contexts[] = {NULL, "prod"};
    char err[KC_ERR_LEN];

    for (size_t i = 0; i < ARRAY_SIZE(contexts); i++) {
        struct kc_config *c = NULL;
        int r =
            kc_load_mem((const char *)data, size, "fuzz", NULL, contexts[i], &c, err, sizeof err);

        check(c, r, err, sizeof err);
        kc_config_free(c);
    }
    return 0;
}
