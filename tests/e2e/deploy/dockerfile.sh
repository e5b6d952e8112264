#!/usr/bin/env bash
# Static checks of deploy/Dockerfile (it is not built in CI: no registry access):
#   dockerfile.sh REPO [AGENT-BINARY]
# - the build stage installs every library package of scripts/install-deps.sh;
# - the image runs as the numeric user of deploy/deployment.yaml (runAsNonRoot needs a numeric USER);
# - with the agent binary: every shared library it needs directly comes from a package the runtime stage
#   installs (or is libc6, libgcc-s1, libstdc++6), and every library package the runtime stage installs
#   provides a library the agent loads (nothing useless). Without the binary that part is skipped (77).
set -euo pipefail
REPO=$1
BIN=${2:-}
DF=$REPO/deploy/Dockerfile
fail() { printf 'dockerfile: FAIL: %s\n' "$*" >&2; exit 1; }
# member WORD LIST...: WORD is one of LIST (no pipes: grep -q closing early fails a pipefail pipeline).
member() {
  local w=$1 x
  shift
  for x in "$@"; do [ "$x" = "$w" ] && return 0; done
  return 1
}

# Packages of an `apt-get install` in a stage: the continuation lines after `install ... \` up to the `&&`.
stage_packages() { # stage_packages N (1 = build, 2 = runtime)
  awk -v want="$1" '
    /^FROM / { stage++ }
    stage == want && /apt-get install/ { inst = 1; next }
    stage == want && inst { if ($1 == "&&") { inst = 0; next } for (i = 1; i <= NF; i++) if ($i != "\\") print $i }
  ' "$DF"
}
mapfile -t build_pkgs < <(stage_packages 1)
mapfile -t run_pkgs < <(stage_packages 2)
[ "${#build_pkgs[@]}" -gt 5 ] || fail "no build packages found in $DF"
[ "${#run_pkgs[@]}" -gt 3 ] || fail "no runtime packages found in $DF"

# Library packages of install-deps.sh: the "# libraries" group of PKGS.
mapfile -t dev_pkgs < <(awk '/# libraries/ { l = 1; next } l && /#/ { l = 0 } l { for (i = 1; i <= NF; i++) print $i }' \
  "$REPO/scripts/install-deps.sh")
[ "${#dev_pkgs[@]}" -gt 3 ] || fail "no library packages found in scripts/install-deps.sh"
for p in "${dev_pkgs[@]}"; do
  member "$p" "${build_pkgs[@]}" || fail "build stage lacks $p (scripts/install-deps.sh)"
done

uid=$(sed -n -e 's/^USER \([0-9][0-9]*\)\(:[0-9]*\)\?$/\1/p' "$DF")
[ -n "$uid" ] || fail "USER must be numeric"
grep -q "runAsUser: $uid\$" "$REPO/deploy/deployment.yaml" || fail "deployment.yaml does not run as $uid"
grep -q '^ENTRYPOINT \["/usr/bin/cliqo-agent"\]' "$DF" || fail "ENTRYPOINT is not the agent"
echo "dockerfile: build stage has the ${#dev_pkgs[@]} library packages of install-deps.sh; runs as $uid"

if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
  echo "dockerfile: SKIP library check: the cliqo-agent binary is not built"
  exit 77
fi

# The Debian package owning a library path (dpkg records /usr/lib or /lib; resolve both, merged-/usr). One
# dpkg-query for every candidate path of every library: each call reads dpkg's whole database (about a
# second on a busy machine), and there are a dozen libraries with five candidates each.
declare -A path_of owner
while read -r so _ path _; do [ -n "${path:-}" ] && path_of[$so]=$path; done < <(ldd "$BIN" | grep '=> /')
candidates() {
  local p=$1
  printf '%s\n' "$p" "$(readlink -f "$p")" "${p#/usr}" "/usr$p" "$(readlink -f "$p" | sed -e 's|^/usr||')"
}
mapfile -t all_candidates < <(for so in "${!path_of[@]}"; do candidates "${path_of[$so]}"; done | sort -u)
while IFS= read -r line; do
  [[ "$line" == *": /"* ]] || continue
  pkg=${line%%: /*}
  for f in ${line#*: }; do owner[$f]=${pkg%%:*}; done
done < <(dpkg-query -S "${all_candidates[@]}" 2>/dev/null || true)
pkg_of() {
  local c
  while read -r c; do
    [ -n "${owner[$c]:-}" ] && { echo "${owner[$c]}"; return 0; }
  done < <(candidates "$1")
  return 1
}
closure_pkgs=()
for so in "${!path_of[@]}"; do closure_pkgs+=("$(pkg_of "${path_of[$so]}" || echo "?")"); done
# In every Debian image (debian:bookworm-slim), so the runtime stage need not name them.
base_pkgs=(libc6 libgcc-s1 libstdc++6)
n=0
while read -r so; do
  case $so in libasan.so* | libubsan.so* | libtsan.so* | liblsan.so*) continue ;; esac # sanitizer builds
  [ -n "${path_of[$so]:-}" ] || fail "$so: not found by ldd"
  p=$(pkg_of "${path_of[$so]}") || fail "$so (${path_of[$so]}): no Debian package owns it"
  member "$p" "${base_pkgs[@]}" && continue
  member "$p" "${run_pkgs[@]}" || fail "the agent needs $so from $p, which the runtime stage does not install"
  n=$((n + 1))
done < <(readelf -d "$BIN" | sed -n -e 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for p in "${run_pkgs[@]}"; do
  # not libraries: the CA bundle, and the program `cliqo-agent gateway` runs (docs/dataplane.md)
  case $p in ca-certificates | wireguard-go) continue ;; esac
  member "$p" "${closure_pkgs[@]}" || fail "runtime package $p provides no library the agent loads"
done
echo "dockerfile: the agent's $n direct libraries come from the runtime packages, and each of those is used"
