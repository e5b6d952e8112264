# cliqo_port NAME: the base port of NAME in tests/ports.tsv (the one table of the test and benchmark port
# ranges), on stdout; fails when NAME is not there. Source it.
cliqo_port() {
  local p
  p=$(awk -v n="$1" '$1 == n { print $2 }' "${BASH_SOURCE[0]%/*}/ports.tsv")
  [ -n "$p" ] || { echo "no port range for $1 in tests/ports.tsv" >&2; return 1; }
  echo "$p"
}
