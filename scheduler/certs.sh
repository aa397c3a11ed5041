#!/usr/bin/env bash
# The certificates of a tokq cluster that speaks TLS (docs/cluster.md, "TLS"):
#
#   scheduler/certs.sh DIR NODE [NODE ...]
#
# NODE is the name or IP address the others reach a node by, or several joined by commas
# (sched.internal,10.0.0.5); its files are named after the first. It writes
#   DIR/ca.pem     the cluster's CA certificate: --tls-ca on every node and client
#   DIR/ca.key     the CA's key: keep it off the nodes, it makes new members
#   DIR/NODE.pem   a node's certificate, signed by the CA: --tls-cert
#   DIR/NODE.key   its key: --tls-key, readable by the node's user only
# Run it again with new nodes to add them: an existing CA is kept.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 DIR NODE [NODE ...]   (NODE: a host name or IP address, or several joined by commas)" >&2
  exit 2
fi
dir=$1
shift
umask 077
mkdir -p "$dir"
cd "$dir"
if [ ! -f ca.pem ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj "/CN=tokq cluster CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    -keyout ca.key -out ca.pem 2>/dev/null
  chmod 644 ca.pem
fi
for node in "$@"; do
  names=()
  IFS=, read -ra hosts <<<"$node"
  for h in "${hosts[@]}"; do
    if [[ $h =~ ^[0-9.]+$ || $h == *:* ]]; then names+=("IP:$h"); else names+=("DNS:$h"); fi
  done
  first=${hosts[0]}
  san=$(IFS=,; echo "${names[*]}")
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' "$san" >"$first.ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$first" -keyout "$first.key" -out "$first.csr" 2>/dev/null
  openssl x509 -req -in "$first.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 -extfile "$first.ext" -out "$first.pem" 2>/dev/null
  chmod 644 "$first.pem"
  rm "$first.csr" "$first.ext"
  echo "$dir/$first.pem and $dir/$first.key for $san"
done
