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
#include <usbmuxd.h>
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

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

// A Wi-Fi device's address. usbmuxd lists it as `NetworkAddress`, the bytes of a sockaddr in the
// layout of the host usbmuxd runs on: Apple's usbmuxd on macOS (and usbmuxd2 before 2023-11, and
// hadeploy's twin) sends the BSD layout (`sa_len`, a one-byte family: AF_INET 2, AF_INET6 30),
// usbmuxd2 since then its host's own (on Linux a two-byte family: AF_INET 2, AF_INET6 10).
// libusbmuxd (2.0.2 and 2.1.1 alike) copies the bytes into `conn_data` unchanged. What reads them
// differs: libimobiledevice 1.3.0 reads the BSD layout on every host (conn_data[0] the length,
// conn_data[1] the family), 1.4.0 casts them to the host's `struct sockaddr` (commit a172604) and
// refuses any other family with IDEVICE_E_UNKNOWN_ERROR. On Linux, 1.4.0 therefore cannot open a
// device that a Mac's usbmuxd (forwarded) or the twin lists (upstream libusbmuxd#134,
// libimobiledevice#1248).
//
// Reads either layout, by its bytes, into a sockaddr of this host. Returns its length, 0 when the
// bytes are neither layout.
static inline socklen_t hadeploy_network_address(const uint8_t *bytes, size_t size,
                                                 struct sockaddr_storage *address) {
    memset(address, 0, sizeof *address);
    int family = 0;
    if (size >= 16 && bytes[0] == 16 && bytes[1] == 2) family = AF_INET;           // BSD sockaddr_in
    else if (size >= 28 && bytes[0] == 28 && bytes[1] == 30) family = AF_INET6;    // BSD sockaddr_in6
    else if (size >= 16 && bytes[0] == 2 && bytes[1] == 0) family = AF_INET;       // Linux sockaddr_in
    else if (size >= 28 && bytes[0] == 10 && bytes[1] == 0) family = AF_INET6;     // Linux sockaddr_in6
    else return 0;
    // Past the family both layouts agree: port, then (IPv4) the address, or (IPv6) flow info, the
    // address and the scope id, all in network order but the scope id (the sender's own order).
    if (family == AF_INET) {
        struct sockaddr_in *in4 = (struct sockaddr_in *)address;
#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
        in4->sin_len = sizeof *in4;
#endif
        in4->sin_family = AF_INET;
        memcpy(&in4->sin_port, bytes + 2, 2);
        memcpy(&in4->sin_addr, bytes + 4, 4);
        return sizeof *in4;
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)address;
#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
    in6->sin6_len = sizeof *in6;
#endif
    in6->sin6_family = AF_INET6;
    memcpy(&in6->sin6_port, bytes + 2, 2);
    memcpy(&in6->sin6_flowinfo, bytes + 4, 4);
    memcpy(&in6->sin6_addr, bytes + 8, 16);
    memcpy(&in6->sin6_scope_id, bytes + 24, 4);
    return sizeof *in6;
}

#if HADEPLOY_LIBIMOBILEDEVICE_1_4
// libimobiledevice 1.4.0's `struct idevice_private` (src/idevice.h), which idevice_free releases
// with free() field by field. Allocated with room to spare so that a later release that appends a
// field reads zeros, not past the allocation.
struct hadeploy_idevice_1_4 {
    char *udid;
    uint32_t mux_id;
    enum idevice_connection_type conn_type;
    void *conn_data;
    int version;
    int device_class;
};
#define HADEPLOY_IDEVICE_ALLOCATION 256
#endif

// idevice_new_with_options(…, IDEVICE_LOOKUP_NETWORK) for either generation and either layout of
// NetworkAddress. Where 1.4.0 refuses the entry's address (above), the device is made here as 1.4.0
// makes it (idevice_from_mux_device), with the address in this host's layout. 1.3.0 reads the BSD
// layout the twin and Apple's usbmuxd send, and is called as it is.
static inline idevice_error_t hadeploy_idevice_new_network(idevice_t *device, const char *udid) {
    idevice_error_t result = idevice_new_with_options(device, udid, IDEVICE_LOOKUP_NETWORK);
#if HADEPLOY_LIBIMOBILEDEVICE_1_4
    if (result != IDEVICE_E_UNKNOWN_ERROR || !udid) return result;
    usbmuxd_device_info_t entry;
    if (usbmuxd_get_device(udid, &entry, DEVICE_LOOKUP_NETWORK) <= 0 || entry.conn_type != CONNECTION_TYPE_NETWORK)
        return result;
    struct sockaddr_storage address;
    socklen_t length =
        hadeploy_network_address((const uint8_t *)entry.conn_data, sizeof entry.conn_data, &address);
    if (length == 0) return result;
    struct hadeploy_idevice_1_4 *made = (struct hadeploy_idevice_1_4 *)calloc(
        1, sizeof *made > HADEPLOY_IDEVICE_ALLOCATION ? sizeof *made : HADEPLOY_IDEVICE_ALLOCATION);
    void *data = malloc(length);
    char *copy = strdup(entry.udid);
    if (!made || !data || !copy) {
        free(made);
        free(data);
        free(copy);
        return result;
    }
    memcpy(data, &address, length);
    made->udid = copy;
    made->mux_id = entry.handle;
    made->conn_type = CONNECTION_NETWORK;
    made->conn_data = data;
    *device = (idevice_t)made;
    return IDEVICE_E_SUCCESS;
#else
    return result;
#endif
}
