/* admission: the agent module `admission` (docs/offloading.md, "Admission").
 *
 * Every replica serves the admission webhooks over HTTPS on --webhook-addr with the serving
 * certificate of Secret cliqo-webhook-certs (reloaded when the Secret changes, without restarting
 * the listener); the leader keeps that Secret (a CA and a serving certificate, renewed and rotated
 * as admission/certs.h says) and the two webhook configurations:
 *   MutatingWebhookConfiguration cliqo-pod-offloading    pods CREATE in namespaces labelled
 *       liqo.io/scheduling-enabled=true -> POST /mutate-pods (the offloading module's handler)
 *   ValidatingWebhookConfiguration cliqo-offer-enforcement  pods CREATE in namespaces labelled
 *       virtualkubelet.liqo.io/origin -> POST /validate-pods (the offer enforcement and the
 *       placement check, here); services, endpointslices and secrets CREATE/UPDATE in those
 *       namespaces, and secrets CREATE/UPDATE in tenant namespaces -> POST /validate-objects (what
 *       a peer's credentials write: admission/objects.h)
 * both failurePolicy Fail, sideEffects None, timeoutSeconds 5, clientConfig.url = --webhook-url +
 * path when given, else Service cliqo-agent-webhook (port 443) in the agent's namespace.
 *
 * Other modules plug their handler in with adm_webhook_register from their init (after this
 * module's: the table lists admission first). Handlers run on the loop, synchronously, from
 * informer caches: a decision never waits for the network.
 *
 * Metrics: cliqo_admission_requests_total{webhook,result} (result: allowed, patched, denied,
 * invalid), cliqo_admission_request_duration_seconds{webhook}. */
#ifndef CLIQO_ADMISSION_ADMISSION_H
#define CLIQO_ADMISSION_ADMISSION_H

#include <jansson.h>
#include <stdbool.h>

#include "admission/review.h"
#include "agent/agent.h"

#define ADM_MUTATING_CONFIG   "cliqo-pod-offloading"
#define ADM_VALIDATING_CONFIG "cliqo-offer-enforcement"
#define ADM_PATH_MUTATE       "/mutate-pods"
#define ADM_PATH_VALIDATE     "/validate-pods"
#define ADM_PATH_OBJECTS      "/validate-objects"

/* What a handler decides. allowed starts true with no patch; a handler that refuses sets allowed
 * false, code (403 by default) and a one-line message; one that mutates sets patch (a JSON array
 * the verdict owns: the caller json_decrefs it). */
struct adm_verdict {
    bool allowed;
    int code;
    char message[ADM_MESSAGE_MAX + 1];
    json_t *patch;
};
typedef void (*adm_handler_fn)(const struct adm_request *req, struct adm_verdict *ret, void *data);

/* Registers the handler of a path ("/mutate-pods") with agent a's admission module; name labels
 * its metrics. From a module's init (after admission's). Returns 0, -EINVAL, -EEXIST, -ENOSPC, or
 * -ENOENT (no admission module in a). */
int adm_webhook_register(struct agent *a, const char *name, const char *path, adm_handler_fn fn,
                         void *data);

int adm_init(struct agent *a);
int adm_start(struct agent *a);
void adm_fini(struct agent *a);
bool adm_ready(struct agent *a);
/* stop: the controller skeleton's (agent_module.ctl) */
#define AGENT_MODULE_ADMISSION                                                                     \
    {                                                                                              \
        .name = "admission", .init = adm_init, .start = adm_start, .fini = adm_fini,               \
        .ready = adm_ready, .ctl = true                                                            \
    }

#endif
