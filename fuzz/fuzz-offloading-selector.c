/* libFuzzer harness for src/offloading/nsof_text.c: the selector syntax of `cliqoctl offload
 * --selector`, typed by users.
 *
 * Invariants: the parser accepts the text or refuses it with a non-empty one-line reason; an
 * accepted text is no selector (blank) or one term of at most NSOF_MAX_EXPRESSIONS expressions
 * that nsof_selector_validate accepts, and matching a node with it does not crash. */
#include "../src/offloading/nsof_text.c"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), err[256] = "";
    json_t *sel = NULL, *labels;
    int rc;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    rc = nsof_selector_from_text(text, &sel, err, sizeof(err));
    if (rc < 0) {
        check(rc == -EINVAL);
        check(err[0] != '\0' && !strchr(err, '\n'));
        check(!sel);
    } else if (sel) {
        const json_t *terms = json_object_get(sel, "nodeSelectorTerms");

        check(json_array_size(terms) == 1);
        check(json_array_size(json_object_get(json_array_get(terms, 0), "matchExpressions")) <=
              NSOF_MAX_EXPRESSIONS);
        check(nsof_selector_validate(sel, err, sizeof(err)) == 0);
        labels = json_pack("{s:s,s:s}", "liqo.io/type", "virtual-node", "region", "eu");
        (void)nsof_selector_match(sel, "liqo-x", labels);
        json_decref(labels);
    }
    json_decref(sel);
    free(text);
    return 0;
}
