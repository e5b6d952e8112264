#!/usr/bin/env bash
# Installs every Debian package that cliqo's build, tests and demo need.
# Idempotent: packages already present are not reinstalled, and `apt-get update`
# runs only when something is missing (or when the package lists were never fetched).
# Also adds a deb-src entry derived from the machine's own Debian source list, so that
# scripts/build-kube.sh can fetch Debian's `kubernetes` source package.
set -euo pipefail

PKGS=(
  # build
  cmake ninja-build pkg-config gcc clang libclang-rt-14-dev clang-format
  # libraries
  libcurl4-openssl-dev libjansson-dev libyaml-dev libuv1-dev libssl-dev libcmocka-dev
  libc-ares-dev libmicrohttpd-dev libgnutls28-dev zlib1g-dev libzstd-dev
  # the data plane (docs/dataplane.md): nftables through its library, WireGuard in userspace (this kernel
  # has no WireGuard module), and wg and nft (which the network tests read the device and table with; it
  # came before only as a recommendation of iptables and wireguard-tools)
  libnftables-dev wireguard-go wireguard-tools nftables
  # images for real nodes, built without a registry (scripts/build-images.sh)
  umoci busybox-static
  # real nodes of the local clusters (cliqoctl dev up --real-nodes): the container runtime and CNI plugins
  # beside the kubelet, and what kube-proxy's iptables mode calls
  containerd runc containernetworking-plugins iptables conntrack util-linux mount
  # discovery: Avahi's embeddable mDNS stack (no daemon), and the DNS server of the WAN tests
  libavahi-core-dev dnsmasq-base
  # local control planes
  etcd-server etcd-client golang-go rsync golang-github-modern-go-reflect2-dev dpkg-dev
  # tools used by the dev environment and the tests
  openssl curl iproute2 procps ca-certificates prometheus jq
  # the network group's captures (tests/e2e/network/traffic.sh)
  tcpdump
  # the broker dashboard's test: headless Chromium driven by tests/e2e/lib/cdp.py (Debian's python3)
  chromium python3
  # the broker catalog benchmark (bench/broker-catalog.sh): wrk against nginx serving the same bytes
  wrk nginx-light
)

log() { printf 'install-deps: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  log "must run as root (it calls apt-get)"
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive

# deb-src entry: copy the machine's Debian stanzas with Types: deb-src, so no host is written here.
ensure_deb_src() {
  local src=/etc/apt/sources.list.d/debian.sources dst=/etc/apt/sources.list.d/cliqo-deb-src.sources
  [ -f "$dst" ] && return 1
  if grep -qs '^Types:.*deb-src' /etc/apt/sources.list.d/*.sources 2>/dev/null ||
     grep -qsE '^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null; then
    return 1
  fi
  if [ -f "$src" ]; then
    sed -e 's/^Types:.*/Types: deb-src/' "$src" >"$dst"
  elif [ -f /etc/apt/sources.list ]; then
    sed -n -e 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list >/etc/apt/sources.list.d/cliqo-deb-src.list
  else
    log "no Debian apt source found to derive a deb-src entry from"
    exit 1
  fi
  log "added a deb-src entry derived from the machine's Debian sources"
  return 0
}

need_update=0
ensure_deb_src && need_update=1
# Never fetched lists (fresh machine) means apt knows no candidates at all.
if ! ls /var/lib/apt/lists/ 2>/dev/null | grep '_Packages$' >/dev/null; then need_update=1; fi
if ! ls /var/lib/apt/lists/ 2>/dev/null | grep '_Sources$' >/dev/null; then need_update=1; fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
done
if ! command -v kubectl >/dev/null 2>&1; then
  # The machine image ships a recent kubectl; Debian's kubernetes-client is the fallback.
  missing+=(kubernetes-client)
fi

if [ "${#missing[@]}" -gt 0 ] || [ "$need_update" -eq 1 ]; then
  log "apt-get update"
  apt-get update -q >/dev/null
fi
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing: ${missing[*]}"
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
log "all packages present"
