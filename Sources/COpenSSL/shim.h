#include <openssl/bio.h>
#include <openssl/cms.h>
#include <openssl/crypto.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// Function-like macros of OpenSSL 3 that Swift cannot import, as functions.

static inline long hadeploy_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

static inline void hadeploy_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

// The selections of OSSL_ENCODER_CTX_new_for_pkey (composite macros).
static inline int hadeploy_EVP_PKEY_PUBLIC_KEY(void) {
    return EVP_PKEY_PUBLIC_KEY;
}

static inline int hadeploy_EVP_PKEY_RSA(void) {
    return EVP_PKEY_RSA;
}

// SSL_CTX_set_min_proto_version is a macro over SSL_CTX_ctrl.
static inline int hadeploy_SSL_CTX_set_min_proto_version(SSL_CTX *context, int version) {
    return (int)SSL_CTX_set_min_proto_version(context, version);
}
