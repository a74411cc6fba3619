#include <libimobiledevice/libimobiledevice.h>
#include <libimobiledevice/lockdown.h>
#include <libimobiledevice/installation_proxy.h>
#include <libimobiledevice/afc.h>
#include <libimobiledevice/house_arrest.h>
#include <libimobiledevice/screenshotr.h>
#include <libimobiledevice/mobile_image_mounter.h>
#include <libimobiledevice/debugserver.h>
#include <libimobiledevice/service.h>
#include <libimobiledevice/property_list_service.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

// One Swift source for both generations of libimobiledevice: Debian 12's 1.3.0 and Homebrew's 1.4.0.
// Swift calls these hadeploy_* functions, never the calls whose declarations differ between them.
//
// Which generation: IDEVICE_DEVICE_VERSION is a macro that 1.4.0 added (libimobiledevice.h, with
// idevice_get_device_version); 1.3.0 has no such macro.
#if defined(IDEVICE_DEVICE_VERSION)
#define HADEPLOY_LIBIMOBILEDEVICE_1_4 1
#else
#define HADEPLOY_LIBIMOBILEDEVICE_1_4 0
#endif

// The image mounter's signature: 1.3.0 takes `const char *` and a `uint16_t` size, 1.4.0
// `const unsigned char *` and an `unsigned int`. The signature goes in as `const void *`, which C
// converts to either pointer type. A size the installed library cannot take is refused here, not
// truncated.
#if HADEPLOY_LIBIMOBILEDEVICE_1_4
typedef unsigned int hadeploy_image_signature_size_t;
#define HADEPLOY_IMAGE_SIGNATURE_SIZE_MAX UINT_MAX
#else
typedef uint16_t hadeploy_image_signature_size_t;
#define HADEPLOY_IMAGE_SIGNATURE_SIZE_MAX UINT16_MAX
#endif

static inline mobile_image_mounter_error_t hadeploy_mobile_image_mounter_upload_image(
    mobile_image_mounter_client_t client, const char *image_type, size_t image_size, const void *signature,
    size_t signature_size, mobile_image_mounter_upload_cb_t upload_cb, void *userdata) {
    if (signature_size > HADEPLOY_IMAGE_SIGNATURE_SIZE_MAX) return MOBILE_IMAGE_MOUNTER_E_INVALID_ARG;
    return mobile_image_mounter_upload_image(client, image_type, image_size, signature,
                                             (hadeploy_image_signature_size_t)signature_size, upload_cb,
                                             userdata);
}

static inline mobile_image_mounter_error_t hadeploy_mobile_image_mounter_mount_image(
    mobile_image_mounter_client_t client, const char *image_path, const void *signature, size_t signature_size,
    const char *image_type, plist_t *result) {
    if (signature_size > HADEPLOY_IMAGE_SIGNATURE_SIZE_MAX) return MOBILE_IMAGE_MOUNTER_E_INVALID_ARG;
    return mobile_image_mounter_mount_image(client, image_path, signature,
                                            (hadeploy_image_signature_size_t)signature_size, image_type,
                                            result);
}
