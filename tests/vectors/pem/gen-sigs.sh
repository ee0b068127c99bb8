#!/usr/bin/env bash
# How the P-521, RSA-PSS and Ed448 fixtures here were made (once, with OpenSSL 3.5.5; kept so they can be
# remade): keys as `openssl genpkey` writes them, self-signed certificates for localhost valid
# 2023-01-01..2033-01-01 (tests/util's clock is 2023-11-14), with the extensions rcgen gives
# tests/util's other certificates. Each pair is independent: `ONLY=ed448 bash gen-sigs.sh`
# remakes one without replacing the others. tests/util/mod.rs (KeyKind) and src/crypto/sign.rs use them.
set -euo pipefail
O=${OPENSSL:-$HOME/.cache/tls13lab/openssl-3.5.5/bin/openssl}
cd "$(dirname "$0")"
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }
cert() { # key, cert, extra req flags...
  local key=$1 out=$2; shift 2
  "$O" req -x509 -config /dev/null -key "$key" -out "$out" -subj /CN=localhost \
    -not_before 20230101000000Z -not_after 20330101000000Z \
    -addext subjectAltName=DNS:localhost -addext keyUsage=critical,digitalSignature \
    -addext extendedKeyUsage=serverAuth,clientAuth "$@"
}
if want p521; then
  "$O" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-521 -out p521_key.pem
  cert p521_key.pem p521_certificate.pem -sha512
fi
if want rsa_pss; then
  # id-RSASSA-PSS without parameters: any hash.
  "$O" genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:2048 -out rsa_pss_key.pem
  cert rsa_pss_key.pem rsa_pss_certificate.pem -sha256 -sigopt rsa_pss_saltlen:digest
fi
if want rsa_pss_sha384; then
  # id-RSASSA-PSS restricted to SHA-384 (MGF1-SHA-384, salt 48): rsa_pss_pss_sha384 only.
  "$O" genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:2048 -pkeyopt rsa_pss_keygen_md:sha384 \
    -pkeyopt rsa_pss_keygen_mgf1_md:sha384 -pkeyopt rsa_pss_keygen_saltlen:48 \
    -out rsa_pss_sha384_key.pem
  cert rsa_pss_sha384_key.pem rsa_pss_sha384_certificate.pem -sha384 -sigopt rsa_pss_saltlen:digest
fi
if want ed448; then
  # id-Ed448 (RFC 8410): PureEdDSA signs the whole TBSCertificate, so no digest flag.
  "$O" genpkey -algorithm ed448 -out ed448_key.pem
  cert ed448_key.pem ed448_certificate.pem
fi
