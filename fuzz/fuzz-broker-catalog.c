/* libFuzzer harness for src/broker/catalog.c: the query of GET /api/clusters (labelSelector,
 * fieldSelector, limit, continue), which anyone who can reach the broker's API sends.
 *
 * The input is the four parameters separated by newlines (fewer lines: the rest absent).
 * Invariants: the parser accepts them or refuses them with -EINVAL or -ESTALE and a non-empty
 * reason; an accepted query gives a page of at most `limit` items in name order over a fixed set of
 * ForeignClusters, and a page's continue token is accepted again and goes on after its last item.
 */
#include "../src/broker/catalog.c"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char fkey[BRK_TOKEN_KEY_LEN] = "fuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzz";

static void check(bool ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const fcj[] = {
        "{\"metadata\":{\"name\":\"a\",\"labels\":{\"region\":\"eu\"}}}",
        "{\"metadata\":{\"name\":\"b\",\"labels\":{\"region\":\"us\",\"tier\":\"gold\"}}}",
        "{\"metadata\":{\"name\":\"c\"}}",
        "{\"metadata\":{\"labels\":{\"region\":\"eu\"}}}",
        "{\"metadata\":{\"name\":\"d.e\",\"labels\":{\"region\":\"eu\"}}}",
    };
    char *text = malloc(size + 1), *field[4] = {NULL, NULL, NULL, NULL}, err[256] = "";
    char next[BRK_TOKEN_MAX];
    struct brk_catalog_query q, q2;
    json_t *objs[5], *page;
    const json_t *fcs[5];
    int rc;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (strlen(text) != size) { /* a NUL inside: not a query string */
        free(text);
        return 0;
    }
    field[0] = text;
    for (int i = 1; i < 4 && field[i - 1]; i++) {
        char *nl = strchr(field[i - 1], '\n');

        if (nl) {
            *nl = '\0';
            field[i] = nl + 1;
        }
    }
    rc =
        brk_catalog_query_parse(&q, field[0], field[1], field[2], field[3], fkey, err, sizeof(err));
    check(rc == 0 || ((rc == -EINVAL || rc == -ESTALE) && err[0] && !strchr(err, '\n')));
    if (rc == 0) {
        for (int i = 0; i < 5; i++)
            fcs[i] = objs[i] = json_loads(fcj[i], 0, NULL);
        page = brk_catalog_page(fcs, 5, &q, NULL, NULL, fkey, next);
        check(page && (!q.limit || json_array_size(page) <= q.limit));
        for (size_t i = 1; i < json_array_size(page); i++)
            check(strcmp(jsn_str_at(json_array_get(page, i - 1), "metadata", "name", NULL),
                         jsn_str_at(json_array_get(page, i), "metadata", "name", NULL)) < 0);
        if (next[0]) {
            check(brk_catalog_query_parse(&q2, NULL, NULL, NULL, next, fkey, err, sizeof(err)) ==
                  0);
            check(strcmp(q2.after, jsn_str_at(json_array_get(page, json_array_size(page) - 1),
                                              "metadata", "name", NULL)) == 0);
            brk_catalog_query_free(&q2);
        }
        json_decref(page);
        for (int i = 0; i < 5; i++)
            json_decref(objs[i]);
    }
    brk_catalog_query_free(&q);
    free(text);
    return 0;
}
