#!/usr/bin/env bash
# Produces kube-apiserver, kube-scheduler and kube-controller-manager v1.20.2 from Debian's
# `kubernetes` source package and caches them outside the repository. With --node, produces instead the
# binaries of a real node, kubelet and kube-proxy (docs/dataplane.md, "Real nodes"), in a cache entry of
# their own, so that the control plane's entry is never rebuilt for them. With --informerbench, produces the
# client-go reference program of bench/informer-vs-clientgo.sh (bench/clientgo-informer/main.go, one
# shared informer on all pods) against the client-go vendored in the same source, in an entry keyed by
# the program's checksum too. With --kpbgen, produces likewise src/kube/kpbgen (the generator of the
# protobuf schema tables of src/kube/kpb.h, read from the Go types of the same source).
#
# Cache layout: $CLIQO_CACHE_DIR/kube/[node-]<upstream-version>-<dsc-sha256[:12]>-r<recipe>/
#   bin/kube-apiserver bin/kube-scheduler bin/kube-controller-manager   (or bin/kubelet bin/kube-proxy,
#   or bin/informerbench in informerbench-<upstream-version>-<dsc-sha256[:12]>-r<recipe>-<main.go sha[:12]>,
#   or bin/kpbgen in kpbgen-<same>)
#   SHA256SUMS   (checked on every reuse; a cache entry that fails it is rebuilt)
#   gocache-<upstream-version>-<dsc-sha256[:12]>/   Go's build cache, shared by the builds of that source
#   (gocache-go-<same>/ for --informerbench and --kpbgen, which build with `go build` beside the others)
# Prints the bin directory on stdout; progress goes to stderr. With --print-dir, prints the bin directory
# the build makes (or made) and builds nothing: scripts/test.sh names the node's directory to CMake before
# it builds it in the background.
#
# Requires the packages of scripts/install-deps.sh (golang-go, rsync, dpkg-dev, the reflect2 source).
set -euo pipefail

KUBE_VERSION=1.20.2
RECIPE=3 # bump when the way the binaries are built changes (2: providerless; 3: only the OpenAPI generator)
BINS=(kube-apiserver kube-scheduler kube-controller-manager)
PREFIX=
PRINT_DIR=0
GO_MAIN= # --informerbench: the client-go program, built with `go build` instead of the tree's Makefile
for arg in "$@"; do
  case "$arg" in
    --node) BINS=(kubelet kube-proxy) PREFIX=node- ;;
    --informerbench)
      BINS=(informerbench) PREFIX=informerbench-
      GO_MAIN="$(cd "$(dirname "$0")/.." && pwd)/bench/clientgo-informer/main.go"
      ;;
    --kpbgen)
      BINS=(kpbgen) PREFIX=kpbgen-
      GO_MAIN="$(cd "$(dirname "$0")/.." && pwd)/src/kube/kpbgen/main.go"
      ;;
    --print-dir) PRINT_DIR=1 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) printf 'build-kube: unknown argument %s (see --help)\n' "$arg" >&2; exit 2 ;;
  esac
done
CACHE_ROOT="${CLIQO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cliqo}/kube"
REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2

log() { printf 'build-kube: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

verify_entry() { # dir -> 0 when every binary is there and matches SHA256SUMS
  local d=$1
  [ -f "$d/SHA256SUMS" ] || return 1
  for b in "${BINS[@]}"; do [ -x "$d/bin/$b" ] || return 1; done
  (cd "$d" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1)
}

# Key: upstream version + checksum of the Debian source description (covers orig and debian tarballs).
dsc_sha=$(apt-cache showsrc kubernetes 2>/dev/null |
  awk '/^Checksums-Sha256:/{f=1;next} f&&/^ /{if($3 ~ /\.dsc$/){print $1; exit}} f&&!/^ /{f=0}')
dsc_ver=$(apt-cache showsrc kubernetes 2>/dev/null | awk '/^Version:/{print $2; exit}')
if [ -z "$dsc_sha" ]; then
  # No source lists (offline, or deb-src missing): reuse a verified entry for this version if any.
  for d in "$CACHE_ROOT/$PREFIX$KUBE_VERSION"-*-r"$RECIPE"; do
    if [ -d "$d" ] && verify_entry "$d"; then
      log "source index unavailable; using verified cache $(basename "$d")"
      echo "$d/bin"; exit 0
    fi
  done
  die "cannot read the kubernetes source package checksum (run scripts/install-deps.sh first)"
fi
case "$dsc_ver" in
  *really$KUBE_VERSION* | "$KUBE_VERSION"*) ;;
  *) die "Debian's kubernetes source is $dsc_ver, expected upstream $KUBE_VERSION" ;;
esac

entry="$CACHE_ROOT/$PREFIX$KUBE_VERSION-${dsc_sha:0:12}-r$RECIPE"
if [ -n "$GO_MAIN" ]; then
  [ -f "$GO_MAIN" ] || die "missing $GO_MAIN"
  main_sha=$(sha256sum "$GO_MAIN" | cut -c1-12)
  entry="$entry-$main_sha"
fi
if [ "$PRINT_DIR" = 1 ]; then echo "$entry/bin"; exit 0; fi
if verify_entry "$entry"; then
  log "cached: $entry"
  echo "$entry/bin"; exit 0
fi
[ -d "$entry" ] && { log "cache entry $entry failed verification; rebuilding"; rm -rf "$entry"; }

for t in go rsync dpkg-source; do command -v "$t" >/dev/null || die "missing $t (run scripts/install-deps.sh)"; done
[ -d "$REFLECT2_SRC" ] || die "missing $REFLECT2_SRC (package golang-github-modern-go-reflect2-dev)"

mkdir -p "$CACHE_ROOT"
# One build at a time, in one fixed directory, with Go's build cache kept beside the entries: the node's
# build (kubelet, kube-proxy), which scripts/test.sh starts after the control plane's, then finds the packages
# the two share (apimachinery, client-go, api, ...) compiled, since Go's cache keys hold the package's
# directory. The tree's Makefile sets GOCACHE to _output/local/go/cache itself: the kept cache is moved
# there before the build and back after it. A build that waited for the lock first looks whether the other
# one made its entry. The programs built with `go build` (--kpbgen, --informerbench) have a directory, a
# lock and a Go cache of their own ("go"): the Makefile's flags (-trimpath, -ldflags) key its cache entries
# apart from theirs anyway, and scripts/test.sh builds kpbgen while the control plane builds.
slot=
[ -z "$GO_MAIN" ] || slot=-go
exec 9>"$CACHE_ROOT/build$slot.lock"
flock 9
if verify_entry "$entry"; then
  log "cached (built while waiting): $entry"
  echo "$entry/bin"; exit 0
fi
work=$CACHE_ROOT/work$slot
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
gocache="$CACHE_ROOT/gocache$slot-$KUBE_VERSION-${dsc_sha:0:12}"
start=$(date +%s)

log "fetching Debian source kubernetes $dsc_ver (about 34 MB)"
(cd "$work" && apt-get source -q kubernetes >"$work/apt-source.log" 2>&1) ||
  { tail -20 "$work/apt-source.log" >&2; die "apt-get source kubernetes failed"; }
tree=$(find "$work" -maxdepth 1 -mindepth 1 -type d -name 'kubernetes-*' | head -1)
[ -n "$tree" ] && [ -d "$tree/vendor" ] || die "unpacked source tree not found or has no vendor/"

# The vendored reflect2 1.0.1 crashes under Go >= 1.18; use Debian's 1.0.2 sources.
log "replacing vendored github.com/modern-go/reflect2 with Debian's packaged version"
rm -rf "$tree/vendor/github.com/modern-go/reflect2"
cp -r "$REFLECT2_SRC" "$tree/vendor/github.com/modern-go/reflect2"
rm -f "$tree/vendor/github.com/modern-go/reflect2/go.mod"

# GOPATH-mode build through the tree's own Makefile.
mkdir -p "$work/gopath/src/k8s.io"
ln -s "$tree" "$work/gopath/src/k8s.io/kubernetes"
rm -rf "$tree/_output"
mkdir -p "$tree/_output/local/go"
[ ! -d "$gocache" ] || mv "$gocache" "$tree/_output/local/go/cache"
log "building ${BINS[*]} (takes several minutes the first time)"
if [ -n "$GO_MAIN" ]; then
  mkdir -p "$tree/cmd/${BINS[0]}"
  cp "$GO_MAIN" "$tree/cmd/${BINS[0]}/main.go"
fi
(
  cd "$work/gopath/src/k8s.io/kubernetes"
  export GOPATH="$work/gopath" GOCACHE="$tree/_output/local/go/cache" GO111MODULE=off CGO_ENABLED=0 GOFLAGS=
  if [ -n "$GO_MAIN" ]; then
    mkdir -p _output/local/bin/linux/amd64
    go build -ldflags "-X main.kubeVersion=$KUBE_VERSION" -o "_output/local/bin/linux/amd64/${BINS[0]}" \
      "./cmd/${BINS[0]}" >"$work/make.log" 2>&1
  else
    # The tree's Makefile (`make WHAT=...`) runs every code generator over the whole tree before it
    # builds. The source package already carries what they write (the deepcopy, conversion, defaults and
    # prerelease-lifecycle files: regenerated, they differ only by the `//go:build` line that Go's gofmt
    # adds beside the `// +build` line already there), but for one file: kube-apiserver's OpenAPI
    # definitions. Only that one is generated here, by the Makefile's own rule, then the binaries are
    # built as the Makefile builds them. Measured alone on 2 cores: the generators took 124 s (165 CPU-s),
    # the OpenAPI file alone 39 s (53 CPU-s).
    if [[ " ${BINS[*]} " == *" kube-apiserver "* ]]; then
      openapi=pkg/generated/openapi/zz_generated.openapi.go
      make -f Makefile.generated_files CALLED_FROM_MAIN_MAKEFILE=1 KUBE_VERBOSE=0 OUT_DIR=_output \
        BIN_DIR=_output/bin META_DIR=.make PRJ_SRC_PATH=k8s.io/kubernetes \
        GENERATED_FILE_PREFIX=zz_generated. "$openapi" >"$work/make.log" 2>&1
      [ -s "$openapi" ] || { echo "no $openapi after the Makefile's rule" >>"$work/make.log"; exit 1; }
    fi
    # providerless: without the in-tree cloud providers and their volume plugins and credential providers
    # (the AWS, Azure, GCE, OpenStack and vSphere SDKs), an upstream build tag. Local clusters have no cloud,
    # and the build does about a third less work.
    GOFLAGS=-tags=providerless hack/make-rules/build.sh "${BINS[@]/#/cmd/}" >>"$work/make.log" 2>&1
  fi
) &
mk=$!
while kill -0 "$mk" 2>/dev/null; do
  sleep 15
  kill -0 "$mk" 2>/dev/null || break
  done_bins=$(ls "$tree/_output/local/bin/linux/amd64/" 2>/dev/null | grep -c -e '^kube' -e '^informerbench' -e '^kpbgen' || true)
  log "  ... $(($(date +%s) - start))s elapsed, $done_bins/${#BINS[@]} binaries done, last: $(tail -1 "$work/make.log" | cut -c1-80)"
done
mk_rc=0
wait "$mk" || mk_rc=$?
[ ! -d "$tree/_output/local/go/cache" ] || mv "$tree/_output/local/go/cache" "$gocache"
if [ "$mk_rc" -ne 0 ]; then
  tail -30 "$work/make.log" >&2
  die "make failed (log above)"
fi

out="$tree/_output/local/bin/linux/amd64"
tmp_entry="$entry.tmp.$$"
mkdir -p "$tmp_entry/bin"
for b in "${BINS[@]}"; do
  [ -x "$out/$b" ] || die "make did not produce $b"
  cp "$out/$b" "$tmp_entry/bin/$b"
done
(cd "$tmp_entry" && sha256sum bin/* >SHA256SUMS)
mv "$tmp_entry" "$entry"
log "built in $(($(date +%s) - start))s; cached at $entry"
echo "$entry/bin"
