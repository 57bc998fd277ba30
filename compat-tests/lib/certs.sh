#!/usr/bin/env bash
# Makes the test certificates of the compatibility lab and the benchmark
# with openssl, so that Gregor and Kafka are given the same keys:
#
#   compat-tests/lib/certs.sh DIR
#
# DIR/ca.pem (and ca.key): a CA; DIR/broker-store.pem: the broker's key and
# certificate in one PEM file (CN=localhost, SAN 127.0.0.1 and localhost),
# as both brokers take it with ssl.keystore.type=PEM; DIR/client.key and
# DIR/client.pem: a client certificate (CN=client) for mTLS. All are
# signed by the CA and valid for two days.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: certs.sh DIR" >&2; exit 2; }
d=$1
mkdir -p "$d"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=compat-lab-ca \
	-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
for name in broker client; do
	subj=/CN=localhost san="subjectAltName=IP:127.0.0.1,DNS:localhost"
	[[ $name == broker ]] || subj=/CN=client san="extendedKeyUsage=clientAuth"
	openssl req -newkey rsa:2048 -nodes -subj "$subj" -keyout "$d/$name.key" -out "$d/$name.csr" 2>/dev/null
	openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
		-extfile <(echo "$san") -out "$d/$name.pem" 2>/dev/null
done
cat "$d/broker.key" "$d/broker.pem" >"$d/broker-store.pem"
