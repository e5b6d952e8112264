#!/usr/bin/env bash
# Builds the container images the real nodes of the local clusters need, without any registry
# (docs/dataplane.md, "Real nodes"), and caches them outside the repository.
#
#   cliqo/busybox:<tag>   Debian's static busybox with its applets linked in /bin, PATH=/bin, command
#                         `sleep infinity`. It is the pods' sandbox (the kubelet's
#                         --pod-infra-container-image, containerd's sandbox_image) and the image of the
#                         demo's and tests' pods (a shell; `httpd` serves a page).
#
# Each image is an OCI image layout tarball, made with umoci from files of Debian packages, loadable with
# `ctr -n k8s.io images import --base-name cliqo/busybox <tar>`. Cache:
#   $CLIQO_CACHE_DIR/images/<name>-<tag>.tar and .ref (the image reference to give a pod)
# where the tag is the first 12 hex digits of the SHA-256 of the inputs (this script's recipe and the
# busybox package's version), so a new busybox or recipe makes a new tag and an old entry is never reused.
# Prints the tarball's path on stdout; progress goes to stderr. Idempotent.
#
# Requires the packages of scripts/install-deps.sh (umoci, busybox-static). Checked by hand: the image
# imports into containerd 1.6 from Debian and runs under its runc.
set -euo pipefail

RECIPE=1 # bump when the way the image is built changes
CACHE_ROOT="${CLIQO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cliqo}/images"
BUSYBOX=/bin/busybox

log() { printf 'build-images: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
case "${1:-}" in
  -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  '') ;;
  *) die "no arguments expected (see --help)" ;;
esac
for t in umoci sha256sum tar; do command -v "$t" >/dev/null || die "missing $t (run scripts/install-deps.sh)"; done
bb_ver=$(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null) || die "busybox-static is not installed (run scripts/install-deps.sh)"
[ -x "$BUSYBOX" ] || die "$BUSYBOX is missing (package busybox-static)"

tag=$(printf 'recipe=%s busybox-static=%s\n' "$RECIPE" "$bb_ver" | sha256sum | cut -c1-12)
name=busybox
tar_path="$CACHE_ROOT/$name-$tag.tar"
if [ -s "$tar_path" ] && [ -s "$tar_path.ref" ] && tar -tf "$tar_path" 2>/dev/null | grep -x "./index.json" >/dev/null; then
  log "cached: $tar_path ($(cat "$tar_path.ref"))"
  echo "$tar_path"; exit 0
fi

mkdir -p "$CACHE_ROOT"
work=$(mktemp -d "$CACHE_ROOT/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "building cliqo/$name:$tag from busybox-static $bb_ver"
umoci init --layout "$work/oci"
umoci new --image "$work/oci:$tag"
umoci unpack --image "$work/oci:$tag" "$work/bundle" >/dev/null
root="$work/bundle/rootfs"
mkdir -p "$root/bin" "$root/tmp" "$root/www" "$root/etc"
chmod 1777 "$root/tmp"
install -m 0755 "$BUSYBOX" "$root/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\n' >"$root/etc/group"
umoci repack --image "$work/oci:$tag" "$work/bundle"
umoci config --image "$work/oci:$tag" --config.env PATH=/bin --config.cmd sleep --config.cmd infinity \
  --config.workingdir / --author cliqo
umoci gc --layout "$work/oci"
tar -C "$work/oci" -cf "$work/image.tar" .
mv "$work/image.tar" "$tar_path"
echo "cliqo/$name:$tag" >"$tar_path.ref"
# Older entries of this image are left for whoever still runs them; only the build directory goes.
log "built: $tar_path ($(du -h "$tar_path" | cut -f1))"
echo "$tar_path"
