/* Unit tests of src/admission/podsec.c: one row per control per level, with the allowed values
 * and the refused ones and the exact message; the level of a consumer in a ClusterConfig; the
 * bounds of the message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testjson.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/podsec.h"

/* A pod: metadata extra (annotations), spec extra, the container "c" extra. */
#define POD_A(ann, spec, c)                                                                        \
    "{'metadata':{'name':'p'" ann "},'spec':{" spec "'containers':[{'name':'c','image':'i'" c "}]" \
    "}}"
#define POD(spec, c) POD_A("", spec, c)
/* A container securityContext that restricted allows, with extra fields. */
#define RSC_CAPS(caps, extra)                                                                      \
    ",'securityContext':{'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']" caps     \
    "},'runAsNonRoot':true,'seccompProfile':{'type':'RuntimeDefault'}" extra "}"
#define RSC(extra) RSC_CAPS("", extra)
#define BL         "violates PodSecurity \"baseline:latest\": "
#define RS         "violates PodSecurity \"restricted:latest\": "

struct row {
    const char *what;
    enum adm_podsec_level level;
    const char *pod;
    const char *msg; /* NULL: allowed */
};

#define PRIV ADM_PODSEC_PRIVILEGED
#define BASE ADM_PODSEC_BASELINE
#define REST ADM_PODSEC_RESTRICTED

static const struct row rows[] = {
    /* the default pod */
    {"minimal at baseline", BASE, POD("", ""), NULL},
    {"minimal at restricted", REST, POD("", ""),
     RS "allowPrivilegeEscalation != false (container \"c\" must set "
        "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
        "\"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod "
        "or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or "
        "container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
        "\"Localhost\")"},
    {"hardened at restricted", REST, POD("", RSC("")), NULL},

    /* host namespaces */
    {"host namespaces false", BASE, POD("'hostNetwork':false,'hostPID':false,'hostIPC':false,", ""),
     NULL},
    {"host namespaces true", BASE, POD("'hostNetwork':true,'hostPID':true,'hostIPC':true,", ""),
     BL "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)"},
    {"hostPID at restricted", REST, POD("'hostPID':true,", RSC("")),
     RS "host namespaces (hostPID=true)"},
    {"host namespaces at privileged", PRIV, POD("'hostNetwork':true,", ""), NULL},

    /* privileged */
    {"privileged false", BASE, POD("", ",'securityContext':{'privileged':false}"), NULL},
    {"privileged true", BASE, POD("", ",'securityContext':{'privileged':true}"),
     BL "privileged (container \"c\" must not set securityContext.privileged=true)"},
    {"privileged init and ephemeral", BASE,
     POD("'initContainers':[{'name':'i','securityContext':{'privileged':true}}],"
         "'ephemeralContainers':[{'name':'e','securityContext':{'privileged':true}}],",
         ",'securityContext':{'privileged':true}"),
     BL "privileged (containers \"i\", \"c\", \"e\" must not set "
        "securityContext.privileged=true)"},
    {"privileged at restricted", REST, POD("", RSC(",'privileged':true")),
     RS "privileged (container \"c\" must not set securityContext.privileged=true)"},
    {"privileged at privileged", PRIV, POD("", ",'securityContext':{'privileged':true}"), NULL},

    /* capabilities */
    {"default capabilities", BASE,
     POD("", ",'securityContext':{'capabilities':{'add':['CHOWN','NET_BIND_SERVICE','KILL']}}"),
     NULL},
    {"non-default capabilities", BASE,
     POD("", ",'securityContext':{'capabilities':{'add':['SYS_ADMIN','CHOWN','NET_ADMIN']}}"),
     BL "non-default capabilities (container \"c\" must not include \"NET_ADMIN\", "
        "\"SYS_ADMIN\" in securityContext.capabilities.add)"},
    {"restricted adds NET_BIND_SERVICE", REST, POD("", RSC_CAPS(",'add':['NET_BIND_SERVICE']", "")),
     NULL},
    {"restricted adds CHOWN", REST, POD("", RSC_CAPS(",'add':['CHOWN']", "")),
     RS "unrestricted capabilities (container \"c\" must not include \"CHOWN\" in "
        "securityContext.capabilities.add)"},
    {"restricted without drop ALL", REST,
     POD("", ",'securityContext':{'allowPrivilegeEscalation':false,'capabilities':{'drop':['NET_"
             "RAW'],'add':['SYS_ADMIN']},'runAsNonRoot':true,'seccompProfile':{'type':'"
             "RuntimeDefault'}}"),
     RS "unrestricted capabilities (container \"c\" must set "
        "securityContext.capabilities.drop=[\"ALL\"]; container \"c\" must not include "
        "\"SYS_ADMIN\" in securityContext.capabilities.add)"},
    {"capabilities at privileged", PRIV,
     POD("", ",'securityContext':{'capabilities':{'add':['SYS_ADMIN']}}"), NULL},

    /* hostPath */
    {"emptyDir", BASE, POD("'volumes':[{'name':'e','emptyDir':{}}],", ""), NULL},
    {"hostPath", BASE,
     POD("'volumes':[{'name':'h','hostPath':{'path':'/'}},{'name':'g','hostPath':{'path':'/"
         "etc'}}],",
         ""),
     BL "hostPath volumes (volumes \"h\", \"g\")"},
    {"hostPath at restricted", REST,
     POD("'volumes':[{'name':'h','hostPath':{'path':'/'}}],", RSC("")),
     RS "hostPath volumes (volume \"h\"), restricted volume types (volume \"h\" uses restricted "
        "volume type \"hostPath\")"},
    {"hostPath at privileged", PRIV, POD("'volumes':[{'name':'h','hostPath':{'path':'/'}}],", ""),
     NULL},

    /* host ports */
    {"hostPort 0", BASE, POD("", ",'ports':[{'containerPort':80,'hostPort':0}]"), NULL},
    {"hostPort 8080", BASE, POD("", ",'ports':[{'containerPort':80,'hostPort':8080}]"),
     BL "hostPort (container \"c\" uses hostPort 8080)"},
    {"hostPorts of two containers", BASE,
     POD("'initContainers':[{'name':'i','ports':[{'containerPort':1,'hostPort':443}]}],",
         ",'ports':[{'containerPort':80,'hostPort':80},{'containerPort':81,'hostPort':443}]"),
     BL "hostPort (containers \"i\", \"c\" use hostPorts 443, 80)"},
    {"hostPort at restricted", REST,
     POD("", RSC("") ",'ports':[{'containerPort':80,'hostPort':1}]"),
     RS "hostPort (container \"c\" uses hostPort 1)"},
    {"hostPort at privileged", PRIV, POD("", ",'ports':[{'containerPort':80,'hostPort':80}]"),
     NULL},

    /* AppArmor */
    {"AppArmor runtime/default and localhost", BASE,
     POD_A(",'annotations':{'container.apparmor.security.beta.kubernetes.io/c':'runtime/"
           "default','container.apparmor.security.beta.kubernetes.io/d':'localhost/prof'}",
           "", ""),
     NULL},
    {"AppArmor unconfined", BASE,
     POD_A(",'annotations':{'container.apparmor.security.beta.kubernetes.io/c':'unconfined'}", "",
           ""),
     BL "forbidden AppArmor profile (container.apparmor.security.beta.kubernetes.io/"
        "c=\"unconfined\")"},
    {"AppArmor field", BASE,
     POD("'securityContext':{'appArmorProfile':{'type':'Unconfined'}},",
         ",'securityContext':{'appArmorProfile':{'type':'RuntimeDefault'}}"),
     BL "forbidden AppArmor profile (pod securityContext.appArmorProfile.type=\"Unconfined\")"},
    {"AppArmor at restricted", REST,
     POD_A(",'annotations':{'container.apparmor.security.beta.kubernetes.io/c':'unconfined'}", "",
           RSC(",'appArmorProfile':{'type':'Unconfined'}")),
     RS "forbidden AppArmor profiles (container.apparmor.security.beta.kubernetes.io/"
        "c=\"unconfined\", container \"c\" securityContext.appArmorProfile.type=\"Unconfined\")"},
    {"AppArmor at privileged", PRIV,
     POD_A(",'annotations':{'container.apparmor.security.beta.kubernetes.io/c':'unconfined'}", "",
           ""),
     NULL},

    /* SELinux */
    {"SELinux container_t and a level", BASE,
     POD("'securityContext':{'seLinuxOptions':{'type':'container_t','level':'s0:c1'}},",
         ",'securityContext':{'seLinuxOptions':{'type':'container_init_t'}}"),
     NULL},
    {"SELinux type, user, role", BASE,
     POD("'securityContext':{'seLinuxOptions':{'type':'spc_t'}},",
         ",'securityContext':{'seLinuxOptions':{'user':'system_u','role':'system_r'}}"),
     BL "seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type \"spc_t\"; "
        "container \"c\" set forbidden securityContext.seLinuxOptions: user \"system_u\", role "
        "\"system_r\")"},
    {"SELinux at restricted", REST, POD("", RSC(",'seLinuxOptions':{'type':'unconfined_t'}")),
     RS "seLinuxOptions (container \"c\" set forbidden securityContext.seLinuxOptions: type "
        "\"unconfined_t\")"},
    {"SELinux at privileged", PRIV,
     POD("'securityContext':{'seLinuxOptions':{'type':'spc_t'}},", ""), NULL},

    /* /proc mount */
    {"procMount Default", BASE, POD("", ",'securityContext':{'procMount':'Default'}"), NULL},
    {"procMount Unmasked", BASE, POD("", ",'securityContext':{'procMount':'Unmasked'}"),
     BL "procMount (container \"c\" must not set securityContext.procMount to \"Unmasked\")"},
    {"procMount at restricted", REST, POD("", RSC(",'procMount':'Unmasked'")),
     RS "procMount (container \"c\" must not set securityContext.procMount to \"Unmasked\")"},
    {"procMount at privileged", PRIV, POD("", ",'securityContext':{'procMount':'Unmasked'}"), NULL},

    /* seccomp */
    {"seccomp RuntimeDefault and Localhost", BASE,
     POD("'securityContext':{'seccompProfile':{'type':'RuntimeDefault'}},",
         ",'securityContext':{'seccompProfile':{'type':'Localhost','localhostProfile':'p'}}"),
     NULL},
    {"seccomp Unconfined", BASE,
     POD("'securityContext':{'seccompProfile':{'type':'Unconfined'}},",
         ",'securityContext':{'seccompProfile':{'type':'Unconfined'}}"),
     BL "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\"; "
        "container \"c\" must not set securityContext.seccompProfile.type to \"Unconfined\")"},
    {"seccomp annotation unconfined", BASE,
     POD_A(",'annotations':{'seccomp.security.alpha.kubernetes.io/pod':'unconfined'}", "", ""),
     BL "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")"},
    {"seccomp container annotation unconfined", BASE,
     POD_A(",'annotations':{'container.seccomp.security.alpha.kubernetes.io/c':'unconfined'}", "",
           ""),
     BL "seccompProfile (container \"c\" must not set securityContext.seccompProfile.type to "
        "\"Unconfined\")"},
    {"restricted seccomp on the pod only", REST,
     POD("'securityContext':{'seccompProfile':{'type':'RuntimeDefault'}},",
         ",'securityContext':{'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']},"
         "'runAsNonRoot':true}"),
     NULL},
    {"restricted seccomp by the annotation", REST,
     POD_A(",'annotations':{'seccomp.security.alpha.kubernetes.io/pod':'runtime/default'}", "",
           ",'securityContext':{'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']},"
           "'runAsNonRoot':true}"),
     NULL},
    {"restricted seccomp Unconfined on the container", REST,
     POD("'securityContext':{'seccompProfile':{'type':'RuntimeDefault'}},",
         ",'securityContext':{'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']},"
         "'runAsNonRoot':true,'seccompProfile':{'type':'Unconfined'}}"),
     RS "seccompProfile (container \"c\" must not set securityContext.seccompProfile.type to "
        "\"Unconfined\")"},
    {"restricted seccomp Unconfined pod", REST,
     POD("'securityContext':{'seccompProfile':{'type':'Unconfined'}},",
         ",'securityContext':{'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']},"
         "'runAsNonRoot':true}"),
     RS "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\"; "
        "pod or container \"c\" must set securityContext.seccompProfile.type to "
        "\"RuntimeDefault\" or \"Localhost\")"},
    {"seccomp at privileged", PRIV,
     POD("'securityContext':{'seccompProfile':{'type':'Unconfined'}},", ""), NULL},

    /* sysctls */
    {"safe sysctls", BASE,
     POD("'securityContext':{'sysctls':[{'name':'net.ipv4.ip_local_port_range','value':'1 2'},{"
         "'name':'kernel.shm_rmid_forced','value':'1'}]},",
         ""),
     NULL},
    {"unsafe sysctls", BASE,
     POD("'securityContext':{'sysctls':[{'name':'net.core.somaxconn','value':'1'},{'name':'"
         "kernel.msgmax','value':'1'}]},",
         ""),
     BL "forbidden sysctls (net.core.somaxconn, kernel.msgmax)"},
    {"unsafe sysctl at restricted", REST,
     POD("'securityContext':{'sysctls':[{'name':'vm.swappiness','value':'1'}]},", RSC("")),
     RS "forbidden sysctls (vm.swappiness)"},
    {"sysctls at privileged", PRIV,
     POD("'securityContext':{'sysctls':[{'name':'vm.swappiness','value':'1'}]},", ""), NULL},

    /* hostProcess */
    {"hostProcess false", BASE,
     POD("'securityContext':{'windowsOptions':{'hostProcess':false}},", ""), NULL},
    {"hostProcess true", BASE,
     POD("'securityContext':{'windowsOptions':{'hostProcess':true}},",
         ",'securityContext':{'windowsOptions':{'hostProcess':true}}"),
     BL "hostProcess (pod and container \"c\" must not set "
        "securityContext.windowsOptions.hostProcess=true)"},

    /* restricted: volume types */
    {"restricted volume types allowed", REST,
     POD("'volumes':[{'name':'a','configMap':{'name':'x'}},{'name':'b','secret':{'secretName':'"
         "x'}},{'name':'c','emptyDir':{}},{'name':'d','persistentVolumeClaim':{'claimName':'x'}},"
         "{'name':'e','projected':{'sources':[]}},{'name':'f','downwardAPI':{}},{'name':'g','csi'"
         ":{'driver':'x'}},{'name':'h','ephemeral':{}}],",
         RSC("")),
     NULL},
    {"restricted volume types refused", REST,
     POD("'volumes':[{'name':'n','nfs':{'server':'s','path':'/'}},{'name':'r','rbd':{}},{'name':"
         "'x'}],",
         RSC("")),
     RS "restricted volume types (volumes \"n\", \"r\", \"x\" use restricted volume types \"nfs\", "
        "\"rbd\", \"unknown\")"},
    {"nfs at baseline", BASE, POD("'volumes':[{'name':'n','nfs':{'server':'s','path':'/'}}],", ""),
     NULL},

    /* restricted: privilege escalation */
    {"allowPrivilegeEscalation true", REST,
     POD("", ",'securityContext':{'allowPrivilegeEscalation':true,'capabilities':{'drop':['ALL']},"
             "'runAsNonRoot':true,'seccompProfile':{'type':'RuntimeDefault'}}"),
     RS "allowPrivilegeEscalation != false (container \"c\" must set "
        "securityContext.allowPrivilegeEscalation=false)"},
    {"allowPrivilegeEscalation at baseline", BASE,
     POD("", ",'securityContext':{'allowPrivilegeEscalation':true}"), NULL},

    /* restricted: running as non-root */
    {"runAsNonRoot on the pod", REST,
     POD("'securityContext':{'runAsNonRoot':true},",
         ",'securityContext':{'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']},"
         "'seccompProfile':{'type':'RuntimeDefault'}}"),
     NULL},
    {"runAsNonRoot false", REST,
     POD("'securityContext':{'runAsNonRoot':false},",
         ",'securityContext':{'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']},"
         "'runAsNonRoot':false,'seccompProfile':{'type':'RuntimeDefault'}}"),
     RS "runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false; container "
        "\"c\" must not set securityContext.runAsNonRoot=false)"},
    {"runAsNonRoot at baseline", BASE, POD("'securityContext':{'runAsNonRoot':false},", ""), NULL},

    /* restricted: runAsUser */
    {"runAsUser 1000", REST, POD("'securityContext':{'runAsUser':1000},", RSC(",'runAsUser':1001")),
     NULL},
    {"runAsUser 0", REST, POD("'securityContext':{'runAsUser':0},", RSC(",'runAsUser':0")),
     RS "runAsUser=0 (pod and container \"c\" must not set runAsUser=0)"},
    {"runAsUser 0 at baseline", BASE, POD("'securityContext':{'runAsUser':0},", ""), NULL},

    /* every baseline control at once, in Kubernetes' order */
    {"everything at baseline", BASE,
     POD_A(",'annotations':{'container.apparmor.security.beta.kubernetes.io/c':'unconfined'}",
           "'hostNetwork':true,'securityContext':{'sysctls':[{'name':'vm.x','value':'1'}],"
           "'seccompProfile':{'type':'Unconfined'},'seLinuxOptions':{'role':'r'},"
           "'windowsOptions':{'hostProcess':true}},"
           "'volumes':[{'name':'h','hostPath':{'path':'/'}}],",
           ",'ports':[{'containerPort':1,'hostPort':2}],'securityContext':{'privileged':true,"
           "'procMount':'Unmasked','capabilities':{'add':['NET_RAW']}}"),
     BL "forbidden AppArmor profile (container.apparmor.security.beta.kubernetes.io/"
        "c=\"unconfined\"), non-default capabilities (container \"c\" must not include "
        "\"NET_RAW\" in securityContext.capabilities.add), host namespaces (hostNetwork=true), "
        "hostPath volumes (volume \"h\"), hostPort (container \"c\" uses hostPort 2), privileged "
        "(container \"c\" must not set securityContext.privileged=true), procMount (container "
        "\"c\" must not set securityContext.procMount to \"Unmasked\"), seLinuxOptions (pod set "
        "forbidden securityContext.seLinuxOptions: role \"r\"), seccompProfile (pod must not set "
        "securityContext.seccompProfile.type to \"Unconfined\"), forbidden sysctls (vm.x), "
        "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)"},
};

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        json_t *pod = test_js(r->pod);
        char msg[4096] = "";
        int rc = adm_podsec_check(r->level, pod, msg, sizeof(msg));

        if (!r->msg && rc != 0)
            fail_msg("%s: refused: %s", r->what, msg);
        if (r->msg && rc != -EACCES)
            fail_msg("%s: allowed (%d)", r->what, rc);
        if (r->msg && strcmp(msg, r->msg) != 0)
            fail_msg("%s:\n got  %s\n want %s", r->what, msg, r->msg);
        json_decref(pod);
    }
}

static void test_levels(void **state)
{
    enum adm_podsec_level l = ADM_PODSEC_PRIVILEGED;
    json_t *cc;
    bool bad = true;

    (void)state;
    assert_int_equal(adm_podsec_parse_level("restricted", &l), 0);
    assert_int_equal(l, ADM_PODSEC_RESTRICTED);
    assert_int_equal(adm_podsec_parse_level("baseline", &l), 0);
    assert_int_equal(l, ADM_PODSEC_BASELINE);
    assert_int_equal(adm_podsec_parse_level("privileged", &l), 0);
    assert_int_equal(l, ADM_PODSEC_PRIVILEGED);
    assert_int_equal(adm_podsec_parse_level("Baseline", &l), -EINVAL);
    assert_int_equal(adm_podsec_parse_level(NULL, &l), -EINVAL);
    assert_string_equal(adm_podsec_level_name(ADM_PODSEC_BASELINE), "baseline");

    /* no ClusterConfig, no podSecurity: baseline */
    assert_int_equal(adm_podsec_level_for(NULL, "a", &bad), ADM_PODSEC_BASELINE);
    assert_false(bad);
    cc = test_js("{'spec':{'offloadingConfig':{}}}");
    assert_int_equal(adm_podsec_level_for(cc, "a", NULL), ADM_PODSEC_BASELINE);
    json_decref(cc);

    cc =
        test_js("{'spec':{'offloadingConfig':{'podSecurity':{'level':'privileged','perCluster':[{"
                "'clusterID':'a','level':'restricted'},{'clusterID':'b'},{'clusterID':'c','level':'"
                "bogus'}]}}}}");
    assert_int_equal(adm_podsec_level_for(cc, "a", &bad), ADM_PODSEC_RESTRICTED);
    assert_false(bad);
    assert_int_equal(adm_podsec_level_for(cc, "b", &bad), ADM_PODSEC_PRIVILEGED); /* default */
    assert_int_equal(adm_podsec_level_for(cc, "z", &bad), ADM_PODSEC_PRIVILEGED);
    assert_int_equal(adm_podsec_level_for(cc, NULL, &bad), ADM_PODSEC_PRIVILEGED);
    assert_int_equal(adm_podsec_level_for(cc, "c", &bad), ADM_PODSEC_RESTRICTED);
    assert_true(bad);
    json_decref(cc);

    cc = test_js("{'spec':{'offloadingConfig':{'podSecurity':{'level':7}}}}");
    assert_int_equal(adm_podsec_level_for(cc, "a", &bad), ADM_PODSEC_RESTRICTED);
    assert_true(bad);
    json_decref(cc);
}

/* Many containers with long names: lists stop at ADM_PODSEC_LIST_MAX, the message at the buffer. */
static void test_bounds(void **state)
{
    json_t *pod = test_js(POD("", "")), *cs = json_array();
    char msg[512], small[40], name[80];
    int rc;

    (void)state;
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "container-with-a-rather-long-name-%04d\x01", i);
        json_array_append_new(
            cs, json_pack("{s:s,s:{s:b}}", "name", name, "securityContext", "privileged", 1));
    }
    json_object_set_new(json_object_get(pod, "spec"), "containers", cs);
    rc = adm_podsec_check(ADM_PODSEC_BASELINE, pod, msg, sizeof(msg));
    assert_int_equal(rc, -EACCES);
    assert_true(strlen(msg) == sizeof(msg) - 1);
    assert_string_equal(msg + strlen(msg) - 3, "...");
    assert_non_null(strstr(msg, "container-with-a-rather-long-name-0000?\""));
    assert_null(strchr(msg, '\x01'));
    rc = adm_podsec_check(ADM_PODSEC_RESTRICTED, pod, small, sizeof(small));
    assert_int_equal(rc, -EACCES);
    assert_string_equal(small, "violates PodSecurity \"restricted:lat...");
    assert_int_equal(adm_podsec_check(ADM_PODSEC_BASELINE, pod, NULL, 0), -EACCES);

    /* the list itself stops at ADM_PODSEC_LIST_MAX names */
    json_array_clear(cs);
    for (int i = 0; i < ADM_PODSEC_LIST_MAX + 3; i++) {
        snprintf(name, sizeof(name), "c%d", i);
        json_array_append_new(
            cs, json_pack("{s:s,s:{s:b}}", "name", name, "securityContext", "privileged", 1));
    }
    {
        char big[4096];

        assert_int_equal(adm_podsec_check(ADM_PODSEC_BASELINE, pod, big, sizeof(big)), -EACCES);
        assert_non_null(strstr(big, "\"c15\", ... must not set"));
        assert_null(strstr(big, "\"c16\""));
    }
    json_decref(pod);

    /* not a pod */
    pod = test_js("[1]");
    assert_int_equal(adm_podsec_check(ADM_PODSEC_BASELINE, pod, msg, sizeof(msg)), -EINVAL);
    json_decref(pod);
    /* a pod of the wrong types everywhere is read as absent fields, never trusted */
    pod = test_js("{'metadata':{'annotations':[1]},'spec':{'containers':{'name':'c'},'volumes':'x',"
                  "'securityContext':[],'hostNetwork':'true'}}");
    assert_int_equal(adm_podsec_check(ADM_PODSEC_BASELINE, pod, msg, sizeof(msg)), 0);
    json_decref(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_bounds),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
