/* tests/unit/testjson.h: JSON for table-driven unit tests. Include after <cmocka.h>.
 *
 * test_js("{'a':1}"): the text with every ' turned into ", decoded (any JSON value); a text that
 * does not decode fails the test with jansson's message. The caller owns the result (json_decref).
 */
#ifndef CLIQO_TESTS_TESTJSON_H
#define CLIQO_TESTS_TESTJSON_H

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static inline json_t *test_js(const char *text)
{
    char *t = strdup(text);
    json_error_t e;
    json_t *j;

    if (!t)
        fail_msg("out of memory");
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    j = json_loads(t, JSON_DECODE_ANY, &e);
    if (!j)
        fail_msg("bad test JSON: %s: %s", e.text, t);
    free(t);
    return j;
}

#endif
