import CIMobileDevice
import CPlist
import CUsbmuxd

/// Proves at build and test time that libimobiledevice, libplist and libusbmuxd link.
public enum MobileDeviceLibraries {
    /// Sets the C libraries' debug output level (0 = quiet), touching each of them once.
    public static func configure(debugLevel: Int32 = 0) {
        idevice_set_debug_level(debugLevel)
        libusbmuxd_set_debug_level(debugLevel)
        let dict = plist_new_dict()
        plist_free(dict)
    }
}
