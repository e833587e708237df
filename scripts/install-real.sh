#!/usr/bin/env bash
# Installs what `coordsim real` needs, from Debian's packages: etcd (server and etcdctl),
# ZooKeeper (with a JRE), protoc (to build the etcd client's protobuf code: --features real),
# libfaketime (skewed clocks), iproute2 and nftables (partitions).
# Safe to run again; does nothing when everything is there. `coordsim real doctor` checks.
set -euo pipefail
need=()
[ -x /usr/bin/etcd ] || need+=(etcd-server etcd-client)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
[ -x /usr/bin/java ] || need+=(default-jre-headless)
[ -x /usr/bin/protoc ] || need+=(protobuf-compiler)
# Skewed clocks (libfaketime) and partitions (network namespaces, nftables).
[ -f /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ] || need+=(faketime)
[ -x /usr/sbin/ip ] || need+=(iproute2)
[ -x /usr/sbin/nft ] || need+=(nftables)
if [ ${#need[@]} -eq 0 ]; then
  echo "install-real: etcd, zookeeper, java, protoc, faketime, ip and nft are installed"
  exit 0
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-real: installing ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
# The packages start nothing we need (the zookeeper package ships no running service; the
# etcd-server package may start a single-member etcd on 127.0.0.1:2379 where systemd runs): stop it so that it
# holds no port and no CPU while our own clusters run.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  $SUDO systemctl stop etcd || true
fi
