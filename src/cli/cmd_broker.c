/* cliqoctl broker: a thin client of cliqo-broker's API (docs/broker.md, docs/broker-openapi.yaml):
 * status (GET /api/clusters), toggle (POST /api/toggle), policy (GET and PUT /api/policy). */
#include "cli/cli.h"
#include "cli/kube.h"
#include "common/opts.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/jsonb.h"
#include "common/strutil.h"

#define MAX_ANSWER (64u << 20) /* a catalog of 10,000 clusters fits */
#define MAX_POLICY 65536       /* the API's body limit */

/* One request; *ret the decoded JSON answer (NULL for none). Returns the HTTP status, or -1 with
 * the reason printed. An error answer's message is printed and its status returned. */
static long call(const char *method, const char *url, const char *token, const char *body,
                 json_t **ret)
{
    struct cli_body a = {.too_big = false};
    struct curl_slist *h = NULL;
    char auth[600];
    long status = -1;
    CURL *c = curl_easy_init();
    CURLcode cr;

    *ret = NULL;
    sbuf_init(&a.body, MAX_ANSWER);
    if (!c) {
        cli_fail("broker: out of memory");
        goto out;
    }
    if (token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, cli_body_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    cr = curl_easy_perform(c);
    if (cr != CURLE_OK) {
        cli_fail("broker: %s %s: %s", method, url,
                 a.too_big ? "the answer is too large" : curl_easy_strerror(cr));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (sbuf_len(&a.body) &&
        jsonb_load(sbuf_str(&a.body), sbuf_len(&a.body), 0, 0, 0, ret, NULL) < 0)
        *ret = NULL;
    if (status >= 400) {
        const char *m = json_string_value(json_object_get(*ret, "message"));
        const char *e = json_string_value(json_object_get(*ret, "error"));

        fprintf(stderr, "cliqoctl broker: %s %s: %ld %s%s%s\n", method, url, status, e ? e : "",
                m ? ": " : "", m ? m : "");
    }
out:
    curl_slist_free_all(h);
    if (c)
        curl_easy_cleanup(c);
    sbuf_done(&a.body);
    return status;
}

static void print_status(const json_t *list)
{
    size_t i;
    json_t *fc;

    printf("%-20s %-38s %-8s %-7s %-8s %-8s %-8s %s\n", "NAME", "CLUSTER ID", "PROVIDER", "ENABLED",
           "SELECTED", "UPTIME", "LATENCY", "WHY");
    json_array_foreach(list, i, fc)
    {
        const json_t *b = json_object_get(fc, "broker"), *k = json_object_get(b, "kpi");
        const char *id = json_string_value(json_object_get(
            json_object_get(json_object_get(fc, "spec"), "clusterIdentity"), "clusterID"));
        const char *name =
            json_string_value(json_object_get(json_object_get(fc, "metadata"), "name"));
        char up[32] = "-", lat[32] = "-";

        if (json_is_integer(json_object_get(k, "uptimeSeconds")))
            snprintf(up, sizeof(up), "%llds",
                     (long long)json_integer_value(json_object_get(k, "uptimeSeconds")));
        if (json_is_integer(json_object_get(k, "latencyMs")))
            snprintf(lat, sizeof(lat), "%lldms",
                     (long long)json_integer_value(json_object_get(k, "latencyMs")));
        printf("%-20.20s %-38.38s %-8s %-7s %-8s %-8s %-8s %s\n", name ? name : "?", id ? id : "?",
               json_is_true(json_object_get(b, "provider")) ? "yes" : "no",
               json_is_true(json_object_get(b, "enabled")) ? "yes" : "no",
               json_is_true(json_object_get(b, "selected")) ? "yes" : "no", up, lat,
               json_string_value(json_object_get(b, "why"))
                   ? json_string_value(json_object_get(b, "why"))
                   : "");
    }
}

static const char usage[] =
    "Usage: cliqoctl broker status [-o json]\n"
    "       cliqoctl broker toggle CLUSTER_ID on|off\n"
    "       cliqoctl broker policy [FILE|-]\n"
    "\n"
    "A client of cliqo-broker's API (docs/broker.md). status lists the clusters the broker knows,\n"
    "with whether each is a provider, enabled, selected (and why not) and its measured uptime and\n"
    "latency. toggle enables or disables a provider. policy prints the selection policy, or with\n"
    "FILE (- for standard input) replaces it with that JSON. The token (for toggle and a new\n"
    "policy, and for every request when the API listens beyond loopback) comes from --token-file\n"
    "or $CLIQO_BROKER_TOKEN.\n"
    "\n"
    "Options:\n";

int cmd_broker_main(int argc, char **argv)
{
    const char *url = getenv("CLIQO_BROKER_URL"), *token_file = NULL, *args[4] = {0};
    char *token = NULL, *file = NULL, full[2048], err[256];
    bool json = false, help = false;
    json_t *ans = NULL;
    long st;
    int n, rc = 1;
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "url", .kind = OPTS_STRING, .flags = OPTS_NONEMPTY, .arg = "URL", .dest = &url,
         .help = "the broker's API (default $CLIQO_BROKER_URL, else http://127.0.0.1:8000)"},
        {.name = "token-file", .kind = OPTS_STRING, .flags = OPTS_NONEMPTY, .arg = "FILE",
         .dest = &token_file, .help = "the bearer token (default $CLIQO_BROKER_TOKEN)"},
        CLI_OPT_OUTPUT(&json, "status: print the API's JSON"),
        {.name = "help", .short_name = 'h', .kind = OPTS_FLAG, .flags = OPTS_STOP, .dest = &help,
         .help = "print this help"},
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {.defs = defs, .usage = usage, .args = args, .max_args = 3};

    n = opts_parse(&opts, argc, argv, err, sizeof(err));
    if (n < 0)
        return cli_fail("broker: %s", err);
    if (help) {
        opts_print_help(&opts, stdout);
        return 0;
    }
    if (!url)
        url = "http://127.0.0.1:8000";
    if (strlen(url) > 1024 || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
        return cli_fail("broker: --url must be an http:// or https:// URL");
    if (token_file) {
        size_t len;

        if (file_read(token_file, 512, FILE_READ_REGULAR, &token, &len) < 0)
            return cli_fail("broker: cannot read the token file %s", token_file);
        token[strcspn(token, "\r\n")] = '\0';
    } else if (getenv("CLIQO_BROKER_TOKEN")) {
        token = strdup(getenv("CLIQO_BROKER_TOKEN"));
    }
    if (n == 0) {
        rc = cli_fail("broker: say status, toggle or policy (see --help)");
        goto out;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (strcmp(args[0], "status") == 0 && n == 1) {
        snprintf(full, sizeof(full), "%s/api/clusters", url);
        st = call("GET", full, token, NULL, &ans);
        if (st == 200 && json_is_array(ans)) {
            if (json)
                json_dumpf(ans, stdout, JSON_INDENT(2)), putchar('\n');
            else
                print_status(ans);
            rc = 0;
        }
    } else if (strcmp(args[0], "toggle") == 0 && n == 3) {
        bool on = strcmp(args[2], "on") == 0 || strcmp(args[2], "true") == 0;

        if (!on && strcmp(args[2], "off") != 0 && strcmp(args[2], "false") != 0) {
            rc = cli_fail("broker: toggle %s: say on or off", args[1]);
            goto out;
        }
        for (const char *p = args[1]; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-')) {
                rc = cli_fail("broker: '%s' is not a cluster ID", args[1]);
                goto out;
            }
        snprintf(full, sizeof(full), "%s/api/toggle?id=%.64s&enable=%s", url, args[1],
                 on ? "true" : "false");
        st = call("POST", full, token, "", &ans);
        if (st == 200) {
            printf("provider %s %s\n", args[1], on ? "enabled" : "disabled");
            rc = 0;
        }
    } else if (strcmp(args[0], "policy") == 0 && n <= 2) {
        snprintf(full, sizeof(full), "%s/api/policy", url);
        if (n == 2) {
            size_t len;

            if (file_read(strcmp(args[1], "-") == 0 ? "/dev/stdin" : args[1], MAX_POLICY, 0, &file,
                          &len) < 0) {
                rc = cli_fail("broker: cannot read the policy from %s (at most 64 KiB)", args[1]);
                goto out;
            }
            st = call("PUT", full, token, file, &ans);
        } else {
            st = call("GET", full, token, NULL, &ans);
        }
        if (st == 200) {
            json_dumpf(ans, stdout, JSON_INDENT(2));
            putchar('\n');
            rc = 0;
        }
    } else {
        rc = cli_fail("broker: unknown command or wrong arguments (see --help)");
    }
    curl_global_cleanup();
out:
    json_decref(ans);
    free(token);
    free(file);
    return rc;
}
