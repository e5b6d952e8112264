#!/usr/bin/env bash
# tests/lint/check-layers.sh [SRC_ROOT]: the include graph of src/ follows the layers below.
#
# A unit is a folder of src/ (src/peering/controllers is a unit of its own, apart from src/peering), except
# the composition roots named in ROOTS, which may include anything and which nothing may include. An
# `#include "X/..."` from a file of unit A to a header of unit B fails when B's layer is above A's (the include
# runs up a layer), and the units' include graph must have no loop (tsort): the features of one layer may use
# each other, in one direction only. Exits 1 with every offending include listed, 0 when the tree is clean.
set -euo pipefail

# The allowed order, lowest first: a unit may include its own layer's units (without a loop) and any
# layer below. Every folder of src/ with C files must be named here.
LAYERS=(
  "common deploy"                    # helpers every layer uses; the manifests embedded in cliqoctl
  "httpd kube metrics"               # HTTP server; Kubernetes client, informers, work queues; Prometheus
  "peering"                          # the peering library (identities, tokens, PKI, wire formats, CRD table)
  "offer"                            # SharedResources and the offer's amounts (pure)
  "agent"                            # the agent's runtime: modules, peers, config, metrics, controller plumbing
  "admission kubeletapi network peering/controllers offloading virtualkubelet advertisement discovery"
  "broker"                           # catalog, orchestrator, aggregator over the agent's features
)
# Composition roots: files (or folders) that wire every feature together.
ROOTS=(agent/main.c agent/modules.c cli nodesim)

usage() {
  sed -n '2,8s/^# \{0,1\}//p' "$0"
}
case "${1:-}" in -h | --help) usage; exit 0 ;; esac
root=${1:-$(dirname "$0")/../..}
src="$root/src"
[ -d "$src" ] || { echo "check-layers: no src/ under $root" >&2; exit 2; }

mapfile -t files < <(cd "$src" && find . -name '*.[ch]' | sed 's|^\./||' | sort)
[ ${#files[@]} -gt 0 ] || { echo "check-layers: no C files in $src" >&2; exit 2; }
# One pass over every include: "bad MESSAGE" lines for what breaks the order, "edge FROM TO" for the
# includes between units that it allows.
result=$(cd "$src" && grep -nH -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z0-9_-]+/[^"]*"' "${files[@]}" |
  awk -v layers="$(printf '%s\n' "${LAYERS[@]}")" -v roots="${ROOTS[*]}" -v nfiles=${#files[@]} -v self="$0" '
    BEGIN {
      n = split(layers, ls, "\n")
      for (i = 1; i <= n; i++) { m = split(ls[i], us, " "); for (k = 1; k <= m; k++) layer[us[k]] = i }
      nr = split(roots, rs, " ")
    }
    function is_root(p,   k) {
      for (k = 1; k <= nr; k++) if (p == rs[k] || index(p, rs[k] "/") == 1) return 1
      return 0
    }
    function unit_of(p,   d) { # the deepest folder named in LAYERS, else the file s folder
      d = p; sub(/\/[^\/]*$/, "", d)
      while (d != "") {
        if (d in layer) return d
        if (d !~ /\//) break
        sub(/\/[^\/]*$/, "", d)
      }
      d = p; sub(/\/[^\/]*$/, "", d); return d
    }
    {
      f = $0; sub(/:.*/, "", f)
      line = $0; sub(/^[^:]*:/, "", line); sub(/:.*/, "", line)
      inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
      if (is_root(f)) next
      from = unit_of(f)
      if (!(from in layer)) { if (!(from in told)) print "bad " f ": unit " from " is in no layer (add it to LAYERS in " self ")"; told[from] = 1; next }
      if (is_root(inc)) { print "bad src/" f ":" line ": includes " inc ", a composition root"; next }
      to = unit_of(inc)
      if (to == from) next
      if (!(to in layer)) print "bad src/" f ":" line ": includes " inc " of unit " to ", which is in no layer"
      else if (layer[to] > layer[from])
        print "bad src/" f ":" line ": includes " inc ": " from " (layer " layer[from] ") runs up to " to " (layer " layer[to] ")"
      else print "edge " from " " to
    }')
bad=0
if grep -q '^bad ' <<<"$result"; then
  sed -n 's/^bad //p' <<<"$result"
  bad=1
fi
mapfile -t edges < <(sed -n 's/^edge //p' <<<"$result" | sort -u)

# Loops among the units (within a layer: the edges across layers all run down).
if [ ${#edges[@]} -gt 0 ]; then
  if ! loop=$(printf '%s\n' "${edges[@]}" | tsort 2>&1 >/dev/null); then :; fi
  if [ -n "$loop" ]; then
    echo "the units' includes close a loop (tsort lists the units on it):"
    sed -n 's/^tsort: //p' <<<"$loop" | grep -v 'input contains a loop' | sed 's/^/  /'
    for e in $(printf '%s\n' "${edges[@]}" | tr ' ' ':'); do
      a=${e%%:*} b=${e##*:}
      if [[ "$a" < "$b" ]] && printf '%s\n' "${edges[@]}" | grep -x "$b $a" >/dev/null; then
        echo "  $a <-> $b (each includes the other)"
      fi
    done
    bad=1
  fi
fi
if [ "$bad" = 1 ]; then
  echo "layers: includes break the order in $0 (docs/architecture.md, \"Layers\")"
  exit 1
fi
echo "layers: ${#files[@]} files, ${#edges[@]} edges between units, no upward include, no loop"
