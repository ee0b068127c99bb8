#!/usr/bin/env bash
# How the ML-DSA fixtures here were made (once, with OpenSSL 3.5.5; kept so they can be remade):
# - mldsa{44,65,87}_key.pem + _certificate.pem: self-signed for localhost, valid
#   2023-01-01..2033-01-01 (tests/util's clock is 2023-11-14), extensions as gen-sigs.sh's.
# - mldsa65_{seed,expanded,both}_key.pem: one ML-DSA-65 key in the three private key forms of
#   RFC 9881 §6 (OpenSSL's output_formats seed-only, priv-only, seed-priv).
# - mldsa_chain_*: an ML-DSA-87 root -> ML-DSA-65 intermediate -> ML-DSA-44 leaf for localhost.
# tests/util/mod.rs (KeyKind) and src/crypto/sign.rs, src/crypto/cert/verify.rs use them.
set -euo pipefail
O=${OPENSSL:-$HOME/.cache/tls13lab/openssl-3.5.5/bin/openssl}
cd "$(dirname "$0")"
leaf_ext=(-addext subjectAltName=DNS:localhost -addext keyUsage=critical,digitalSignature
  -addext extendedKeyUsage=serverAuth,clientAuth)
dates=(-not_before 20230101000000Z -not_after 20330101000000Z)
for l in 44 65 87; do
  "$O" genpkey -algorithm "mldsa$l" -out "mldsa${l}_key.pem"
  "$O" req -x509 -config /dev/null -key "mldsa${l}_key.pem" -out "mldsa${l}_certificate.pem" \
    -subj /CN=localhost "${dates[@]}" "${leaf_ext[@]}"
done
for f in seed:seed-only expanded:priv-only both:seed-priv; do
  "$O" pkey -in mldsa65_key.pem -provparam "ml-dsa.output_formats=${f#*:}" \
    -out "mldsa65_${f%%:*}_key.pem"
done
# The chain. CA keys are not kept: nothing signs with them again.
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$O" genpkey -algorithm mldsa87 -out "$t/root.key"
"$O" req -x509 -config /dev/null -key "$t/root.key" -out mldsa_chain_root.pem \
  -subj "/CN=tls13lab ML-DSA-87 root" "${dates[@]}" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
"$O" genpkey -algorithm mldsa65 -out "$t/int.key"
"$O" req -new -config /dev/null -key "$t/int.key" -subj "/CN=tls13lab ML-DSA-65 intermediate" \
  -out "$t/int.csr"
"$O" x509 -req -in "$t/int.csr" -CA mldsa_chain_root.pem -CAkey "$t/root.key" -out "$t/int.pem" \
  "${dates[@]}" -extfile <(printf 'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n')
"$O" genpkey -algorithm mldsa44 -out mldsa_chain_leaf_key.pem
"$O" req -new -config /dev/null -key mldsa_chain_leaf_key.pem -subj /CN=localhost -out "$t/leaf.csr"
"$O" x509 -req -in "$t/leaf.csr" -CA "$t/int.pem" -CAkey "$t/int.key" -out "$t/leaf.pem" \
  "${dates[@]}" -extfile <(printf 'subjectAltName=DNS:localhost\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n')
cat "$t/leaf.pem" "$t/int.pem" > mldsa_chain.pem
"$O" verify -CAfile mldsa_chain_root.pem -untrusted "$t/int.pem" -attime 1700000000 "$t/leaf.pem"
