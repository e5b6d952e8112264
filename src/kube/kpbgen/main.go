// kpbgen writes the C schema tables of src/kube/kpb.h for the Kubernetes kinds the informers
// list, read by reflection from the Go types of the Kubernetes source it is built against
// (scripts/build-kube.sh --kpbgen builds it inside the source tree the control plane is built from).
//
// For every field of every message reachable from the roots, it takes the protobuf field number
// from the `protobuf:"..."` struct tag, the JSON name and omitempty from the `json:"..."` tag, and
// from the Go type whether the field is a pointer, a slice, a map or an embedded (inline) struct,
// which is what decides how encoding/json writes the object the API server would have sent as
// JSON. Types with a JSON encoding of their own are allowed only when the C decoder knows it
// (Time, MicroTime, Quantity, IntOrString); any other one stops the generator, so a
// Kubernetes version that adds one cannot produce a wrong table silently.
//
// Usage: kpbgen [-o kpb_schema.c]   (standard output without -o)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discv1beta1 "k8s.io/api/discovery/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type root struct {
	group, version, kind string
	obj                  interface{}
}

var roots = []root{
	{"", "v1", "Pod", corev1.Pod{}},
	{"", "v1", "Node", corev1.Node{}},
	{"", "v1", "Namespace", corev1.Namespace{}},
	{"", "v1", "ConfigMap", corev1.ConfigMap{}},
	{"", "v1", "Secret", corev1.Secret{}},
	{"", "v1", "Service", corev1.Service{}},
	{"", "v1", "Endpoints", corev1.Endpoints{}},
	{"", "v1", "Event", corev1.Event{}},
	{"", "v1", "ServiceAccount", corev1.ServiceAccount{}},
	{"", "v1", "ResourceQuota", corev1.ResourceQuota{}},
	{"", "v1", "LimitRange", corev1.LimitRange{}},
	{"coordination.k8s.io", "v1", "Lease", coordv1.Lease{}},
	{"apps", "v1", "Deployment", appsv1.Deployment{}},
	{"apps", "v1", "DaemonSet", appsv1.DaemonSet{}},
	{"discovery.k8s.io", "v1beta1", "EndpointSlice", discv1beta1.EndpointSlice{}},
	{"meta.k8s.io", "v1", "Status", metav1.Status{}},
}

var special = map[reflect.Type]string{
	reflect.TypeOf(metav1.Time{}):        "KPB_TIME",
	reflect.TypeOf(metav1.MicroTime{}):   "KPB_MICROTIME",
	reflect.TypeOf(resource.Quantity{}):  "KPB_QUANTITY",
	reflect.TypeOf(intstr.IntOrString{}): "KPB_INTORSTR",
}

// kubeVersion is set at link time (scripts/build-kube.sh: -ldflags "-X main.kubeVersion=1.20.2").
var kubeVersion string

var marshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

type field struct {
	num          int
	json         string
	kind, vkind  string
	flags        []string
	msg, vmsg    int
	goName, path string
}

type message struct {
	name   string
	fields []field
}

var msgs []*message
var index = map[reflect.Type]int{}

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "kpbgen: "+format+"\n", a...)
	os.Exit(1)
}

// kindOf classifies a Go type (not a pointer, slice or map) as a decoder kind and message index.
func kindOf(t reflect.Type, where string) (string, int) {
	if k, ok := special[t]; ok {
		return k, -1
	}
	if t.Implements(marshaler) || reflect.PtrTo(t).Implements(marshaler) {
		fail("%s: type %s has its own JSON encoding, unknown to the decoder", where, t)
	}
	switch t.Kind() {
	case reflect.String:
		return "KPB_STRING", -1
	case reflect.Bool:
		return "KPB_BOOL", -1
	case reflect.Int32:
		return "KPB_INT32", -1
	case reflect.Int64:
		return "KPB_INT64", -1
	case reflect.Struct:
		return "KPB_MSG", register(t)
	}
	fail("%s: unsupported type %s", where, t)
	return "", -1
}

func register(t reflect.Type) int {
	if i, ok := index[t]; ok {
		return i
	}
	i := len(msgs)
	m := &message{name: strings.TrimPrefix(t.PkgPath(), "k8s.io/kubernetes/vendor/") + "." + t.Name()}
	msgs = append(msgs, m)
	index[t] = i
	for j := 0; j < t.NumField(); j++ {
		sf := t.Field(j)
		where := m.name + "." + sf.Name
		pb := sf.Tag.Get("protobuf")
		if pb == "" {
			// No protobuf field (TypeMeta, inlined without one): the API server writes none
			// of it in a list's items either.
			if sf.Tag.Get("json") != "-" && !(sf.Anonymous && sf.Type == reflect.TypeOf(metav1.TypeMeta{})) {
				fail("%s: a JSON field without a protobuf number", where)
			}
			continue
		}
		parts := strings.Split(pb, ",")
		num, err := strconv.Atoi(parts[1])
		if err != nil || num <= 0 {
			fail("%s: bad protobuf tag %q", where, pb)
		}
		f := field{num: num, goName: sf.Name, msg: -1, vmsg: -1, path: where}
		jt := sf.Tag.Get("json")
		jparts := strings.Split(jt, ",")
		f.json = jparts[0]
		inline := false
		for _, o := range jparts[1:] {
			switch o {
			case "omitempty":
				f.flags = append(f.flags, "KPB_F_OMITEMPTY")
			case "inline":
				inline = true
			}
		}
		if jt == "-" {
			f.kind = "KPB_SKIP"
			m.fields = append(m.fields, f)
			continue
		}
		if f.json == "" {
			if sf.Anonymous || inline {
				inline = true
			} else {
				f.json = sf.Name
			}
		}
		if t == reflect.TypeOf(metav1.ObjectMeta{}) && sf.Name == "ManagedFields" {
			// The informers drop it (informer.h); it is skipped on the wire.
			f.kind = "KPB_SKIP"
			m.fields = append(m.fields, f)
			continue
		}
		ft := sf.Type
		if ft.Kind() == reflect.Ptr {
			f.flags = append(f.flags, "KPB_F_PTR")
			ft = ft.Elem()
		}
		switch {
		case special[ft] != "":
			f.kind, f.msg = kindOf(ft, where)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
			f.kind = "KPB_BYTES"
		case ft.Kind() == reflect.Slice:
			f.flags = append(f.flags, "KPB_F_REPEATED")
			et := ft.Elem()
			if et.Kind() == reflect.Ptr {
				fail("%s: a slice of pointers", where)
			}
			if et.Kind() == reflect.Slice && et.Elem().Kind() == reflect.Uint8 {
				f.kind = "KPB_BYTES"
			} else {
				f.kind, f.msg = kindOf(et, where)
			}
		case ft.Kind() == reflect.Map:
			if ft.Key().Kind() != reflect.String {
				fail("%s: a map whose key is not a string", where)
			}
			f.kind = "KPB_MAP"
			vt := ft.Elem()
			switch {
			case vt.Kind() == reflect.Slice && vt.Elem().Kind() == reflect.Uint8:
				f.vkind = "KPB_BYTES"
			case vt.Kind() == reflect.Slice || vt.Kind() == reflect.Ptr || vt.Kind() == reflect.Map:
				fail("%s: map value %s not supported", where, vt)
			default:
				f.vkind, f.vmsg = kindOf(vt, where)
			}
		default:
			f.kind, f.msg = kindOf(ft, where)
		}
		if inline {
			if f.kind != "KPB_MSG" {
				fail("%s: inline field that is not a struct", where)
			}
			f.flags = append(f.flags, "KPB_F_INLINE")
		}
		m.fields = append(m.fields, f)
	}
	sort.Slice(m.fields, func(a, b int) bool { return m.fields[a].num < m.fields[b].num })
	for k := 1; k < len(m.fields); k++ {
		if m.fields[k].num == m.fields[k-1].num {
			fail("%s: field number %d used twice", m.name, m.fields[k].num)
		}
	}
	return i
}

func cstr(s string) string { return strconv.Quote(s) }

func main() {
	var major, minor int
	if _, err := fmt.Sscanf(kubeVersion, "%d.%d", &major, &minor); err != nil || major <= 0 {
		fail("built without the Kubernetes version (-ldflags \"-X main.kubeVersion=...\")")
	}
	ri := make([]int, len(roots))
	for i, r := range roots {
		ri[i] = register(reflect.TypeOf(r.obj))
	}
	w := os.Stdout
	out := ""
	if len(os.Args) == 3 && os.Args[1] == "-o" {
		out = os.Args[2]
		f, err := os.Create(out + ".tmp")
		if err != nil {
			fail("%v", err)
		}
		defer func() {
			if err := f.Close(); err != nil {
				fail("%v", err)
			}
			if err := os.Rename(out+".tmp", out); err != nil {
				fail("%v", err)
			}
		}()
		w = f
	} else if len(os.Args) != 1 {
		fail("usage: kpbgen [-o FILE]")
	}
	fmt.Fprintln(w, "/* Generated by src/kube/kpbgen from the Kubernetes source the control plane is built from. Do not")
	fmt.Fprintln(w, " * edit: see src/kube/kpb.h. */")
	fmt.Fprintln(w, "#include \"kube/kpb.h\"")
	fmt.Fprintln(w)
	for i, m := range msgs {
		if len(m.fields) == 0 {
			continue
		}
		fmt.Fprintf(w, "static const struct kpb_field f%d[] = { /* %s */\n", i, m.name)
		for _, f := range m.fields {
			flags := "0"
			if len(f.flags) > 0 {
				flags = strings.Join(f.flags, " | ")
			}
			vkind := f.vkind
			if vkind == "" {
				vkind = "0"
			}
			fmt.Fprintf(w, "    {%d, %s, %s, %s, %s, %d, %d},\n", f.num, cstr(f.json), f.kind, flags, vkind,
				f.msg, f.vmsg)
		}
		fmt.Fprintln(w, "};")
	}
	fmt.Fprintln(w, "static const struct kpb_msg msgs[] = {")
	for i, m := range msgs {
		if len(m.fields) == 0 {
			fmt.Fprintf(w, "    {%s, NULL, 0},\n", cstr(m.name))
		} else {
			fmt.Fprintf(w, "    {%s, f%d, %d},\n", cstr(m.name), i, len(m.fields))
		}
	}
	fmt.Fprintln(w, "};")
	fmt.Fprintln(w, "static const struct kpb_root roots[] = {")
	for i, r := range roots {
		fmt.Fprintf(w, "    {%s, %s, %s, %d},\n", cstr(r.group), cstr(r.version), cstr(r.kind), ri[i])
	}
	fmt.Fprintln(w, "};")
	fmt.Fprintf(w, "/* Kubernetes %s */\n", kubeVersion)
	fmt.Fprintln(w, "const struct kpb_schema kpb_schema = {msgs, sizeof(msgs) / sizeof(msgs[0]), roots,")
	fmt.Fprintf(w, "                                      sizeof(roots) / sizeof(roots[0]), %d, %d};\n", major, minor)
}
