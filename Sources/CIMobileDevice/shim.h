#include <libimobiledevice/libimobiledevice.h>
#include <libimobiledevice/lockdown.h>
#include <libimobiledevice/installation_proxy.h>
#include <libimobiledevice/afc.h>
#include <libimobiledevice/screenshotr.h>
#include <libimobiledevice/mobile_image_mounter.h>
#include <libimobiledevice/debugserver.h>
#include <libimobiledevice/service.h>
