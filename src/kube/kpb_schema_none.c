/* The empty schema of a build without CLIQO_KPBGEN (kube/kpb.h): no kind is decoded from
 * protobuf, every informer reads JSON. */
#include "kube/kpb.h"

const struct kpb_schema kpb_schema = {NULL, 0, NULL, 0, 0, 0};
