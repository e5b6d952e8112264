#!/usr/bin/env bash
# Builds the container images the real nodes of the local clusters need, without any registry
# (docs/dataplane.md, "Real nodes"), and caches them outside the repository.
#
#   build-images.sh [busybox]
#     cliqo/busybox:<tag>  Debian's static busybox with its applets linked in /bin, PATH=/bin, command
#                          `sleep infinity`. It is the pods' sandbox (the kubelet's
#                          --pod-infra-container-image, containerd's sandbox_image) and the image of the
#                          demo's and tests' pods (a shell; `httpd` serves a page).
#   build-images.sh agent AGENT [BROKER]
#     cliqo/agent:<tag>    The agent as deploy/ runs it (the Deployments cliqo-agent and cliqo-gateway):
#                          AGENT as /usr/bin/cliqo-agent (and BROKER as /usr/bin/cliqo-broker), Debian's
#                          /usr/bin/wireguard-go (`cliqo-agent gateway` runs it), and every shared library
#                          `ldd` lists for them, at the same paths; user 10001:10001 as in
#                          deploy/Dockerfile, entrypoint cliqo-agent. Give it a release build (the image
#                          is what users run; an ASan build would also need ASAN_OPTIONS and far more memory
#                          than the Deployment's limit).
#
# Each image is an OCI image layout tarball, made with umoci, loadable with
# `ctr -n k8s.io images import --base-name cliqo/<name> <tar>` (`cliqoctl dev import <tar>` does it for every
# real node). Cache:
#   $CLIQO_CACHE_DIR/images/<name>-<tag>.tar and .ref (the image reference to give a pod)
# where the tag is the first 12 hex digits of the SHA-256 of the inputs (this script's recipe and the
# busybox package's version; for the agent, the SHA-256 of every file put in it), so new inputs make a new
# tag and an old entry is never reused. Prints the tarball's path on stdout; progress goes to stderr.
# Idempotent.
#
# Requires the packages of scripts/install-deps.sh (umoci, busybox-static, wireguard-go). Checked by hand:
# the images import into containerd 1.6 from Debian and run under its runc.
set -euo pipefail

RECIPE=1 # bump when the way the image is built changes
CACHE_ROOT="${CLIQO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cliqo}/images"
BUSYBOX=/bin/busybox

log() { printf 'build-images: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
WIREGUARD_GO=/usr/bin/wireguard-go
image=busybox
case "${1:-}" in
  -h | --help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  '' | busybox) [ $# -le 1 ] || die "busybox takes no arguments (see --help)" ;;
  agent)
    [ $# -ge 2 ] && [ $# -le 3 ] || die "usage: build-images.sh agent AGENT [BROKER] (see --help)"
    image=agent AGENT_BIN=$2 BROKER_BIN=${3:-}
    for b in "$AGENT_BIN" ${BROKER_BIN:+"$BROKER_BIN"}; do [ -f "$b" ] && [ -x "$b" ] || die "$b is not an executable file"; done
    [ -x "$WIREGUARD_GO" ] || die "$WIREGUARD_GO is missing (package wireguard-go; run scripts/install-deps.sh)" ;;
  *) die "unknown image '$1' (see --help)" ;;
esac
for t in umoci sha256sum tar ldd; do command -v "$t" >/dev/null || die "missing $t (run scripts/install-deps.sh)"; done

# cached NAME TAG: prints the tarball's path and exits when the cache holds it.
cached() {
  local p="$CACHE_ROOT/$1-$2.tar"
  if [ -s "$p" ] && [ -s "$p.ref" ] && tar -tf "$p" 2>/dev/null | grep -x "./index.json" >/dev/null; then
    log "cached: $p ($(cat "$p.ref"))"
    echo "$p"
    exit 0
  fi
}
# begin NAME TAG WHAT: a build directory ($work, removed at exit) with an empty image unpacked, its root
# filesystem $root holding /tmp (mode 1777) and /etc.
begin() {
  mkdir -p "$CACHE_ROOT"
  work=$(mktemp -d "$CACHE_ROOT/build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  log "building cliqo/$1:$2 from $3"
  umoci init --layout "$work/oci"
  umoci new --image "$work/oci:$2"
  umoci unpack --image "$work/oci:$2" "$work/bundle" >/dev/null
  root="$work/bundle/rootfs"
  mkdir -p "$root/tmp" "$root/etc"
  chmod 1777 "$root/tmp"
}
# finish NAME TAG: the layout as a tarball in the cache, with its .ref.
finish() {
  local p="$CACHE_ROOT/$1-$2.tar"
  umoci gc --layout "$work/oci"
  tar -C "$work/oci" -cf "$work/image.tar" .
  mv "$work/image.tar" "$p"
  echo "cliqo/$1:$2" >"$p.ref"
  # Older entries of this image are left for whoever still runs them; only the build directory goes.
  log "built: $p ($(du -h "$p" | cut -f1))"
  echo "$p"
}

if [ "$image" = agent ]; then
  # The files of the image: the programs, then the libraries ldd resolves for them (with the dynamic
  # loader), each at its path; symbolic links are followed, so the image holds the files themselves.
  files=("$AGENT_BIN" "$WIREGUARD_GO")
  [ -z "$BROKER_BIN" ] || files+=("$BROKER_BIN")
  mapfile -t libs < <(for b in "${files[@]}"; do
    ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
  done | sort -u)
  for l in "${libs[@]}"; do [ -f "$l" ] || die "ldd lists $l, which is not a file"; done
  tag=$({
    printf 'recipe=%s image=agent\n' "$RECIPE"
    sha256sum "$AGENT_BIN" | awk '{print "cliqo-agent", $1}'
    [ -z "$BROKER_BIN" ] || sha256sum "$BROKER_BIN" | awk '{print "cliqo-broker", $1}'
    sha256sum "$WIREGUARD_GO"
    for l in "${libs[@]}"; do sha256sum "$(readlink -f "$l")" | awk -v l="$l" '{print l, $1}'; done
  } | sha256sum | cut -c1-12)
  cached agent "$tag"
  begin agent "$tag" "$AGENT_BIN${BROKER_BIN:+ and $BROKER_BIN} (${#libs[@]} libraries)"
  mkdir -p "$root/usr/bin" "$root/var/run/wireguard"
  install -m 0755 "$AGENT_BIN" "$root/usr/bin/cliqo-agent"
  [ -z "$BROKER_BIN" ] || install -m 0755 "$BROKER_BIN" "$root/usr/bin/cliqo-broker"
  install -m 0755 "$WIREGUARD_GO" "$root/usr/bin/wireguard-go"
  for l in "${libs[@]}"; do install -D -m "$(stat -L -c %a "$l")" "$(readlink -f "$l")" "$root$l"; done
  # Debian's merged /usr: /lib and /lib64 hold what ldd names; a /bin for PATH's sake is not needed.
  printf 'root:x:0:0:root:/:/usr/sbin/nologin\ncliqo:x:10001:10001:cliqo:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\ncliqo:x:10001:\n' >"$root/etc/group"
  umoci repack --image "$work/oci:$tag" "$work/bundle"
  umoci config --image "$work/oci:$tag" --config.env PATH=/usr/bin --config.user 10001:10001 \
    --config.entrypoint /usr/bin/cliqo-agent --config.cmd=--namespace=cliqo --config.cmd=--http-addr=:8080 \
    --config.cmd=--auth-addr=:8443 --config.workingdir / --author cliqo
  finish agent "$tag"
  exit 0
fi
bb_ver=$(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null) || die "busybox-static is not installed (run scripts/install-deps.sh)"
[ -x "$BUSYBOX" ] || die "$BUSYBOX is missing (package busybox-static)"

tag=$(printf 'recipe=%s busybox-static=%s\n' "$RECIPE" "$bb_ver" | sha256sum | cut -c1-12)
name=busybox
cached "$name" "$tag"

begin "$name" "$tag" "busybox-static $bb_ver"
mkdir -p "$root/bin" "$root/www"
install -m 0755 "$BUSYBOX" "$root/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\n' >"$root/etc/group"
umoci repack --image "$work/oci:$tag" "$work/bundle"
umoci config --image "$work/oci:$tag" --config.env PATH=/bin --config.cmd sleep --config.cmd infinity \
  --config.workingdir / --author cliqo
finish "$name" "$tag"
