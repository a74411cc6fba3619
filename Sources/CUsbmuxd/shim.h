#include <usbmuxd.h>
