import ImageCodec

/// Everything that makes one emulated device: identity, firmware, behaviour knobs and faults.
///
/// Decoding fills missing keys from the preset for `productType` (and `productVersion`), so a
/// configuration file only needs `name` and `productType`.
public struct VirtualDeviceProfile: Sendable, Codable, Equatable {
    /// Stable configuration name; the state directory of the device is keyed by it.
    public var name: String
    /// The UDID; nil = made up on first start (right format for the generation) and kept in the state.
    public var udid: String?
    public var productType: String
    public var productVersion: String
    public var buildVersion: String
    /// "armv7" (32-bit devices) or "arm64".
    public var cpuArchitecture: String
    public var deviceName: String
    /// "iPad" or "iPhone".
    public var deviceClass: String
    public var hardwareModel: String
    /// Screen size in pixels, portrait.
    public var screenWidth: Int
    public var screenHeight: Int
    public var pairing: VirtualPairingMode
    /// Faults active from the start.
    public var faults: [VirtualFault]
    /// Screenshot container; nil = what the firmware uses (TIFF up to iOS 8, PNG from iOS 9,
    /// libimobiledevice issue #338).
    public var screenshotFormat: ImageFormat?
    /// The app build on this device fires `ha_dashboard_loaded` after loading its dashboard (the
    /// released HA Dashboard app does not).
    public var appSendsLoadedEvent: Bool = false
    /// USB, network (Wi-Fi sync) or both.
    public var connection: VirtualConnection = .usb
    /// The loopback address a network twin listens on (lockdownd's 62078 and its service ports);
    /// nil = a free one in 127.77.0.0/16 picked at start. Linux routes all of 127/8 to `lo`.
    public var networkAddress: String?

    public init(
        name: String, udid: String? = nil, productType: String, productVersion: String,
        buildVersion: String, cpuArchitecture: String, deviceName: String, deviceClass: String,
        hardwareModel: String, screenWidth: Int, screenHeight: Int, pairing: VirtualPairingMode = .prePaired,
        faults: [VirtualFault] = [], screenshotFormat: ImageFormat? = nil
    ) {
        self.name = name
        self.udid = udid
        self.productType = productType
        self.productVersion = productVersion
        self.buildVersion = buildVersion
        self.cpuArchitecture = cpuArchitecture
        self.deviceName = deviceName
        self.deviceClass = deviceClass
        self.hardwareModel = hardwareModel
        self.screenWidth = screenWidth
        self.screenHeight = screenHeight
        self.pairing = pairing
        self.faults = faults
        self.screenshotFormat = screenshotFormat
    }

    private enum CodingKeys: String, CodingKey {
        case name, udid, productType, productVersion, buildVersion, cpuArchitecture, deviceName
        case deviceClass, hardwareModel, screenWidth, screenHeight, pairing, faults, screenshotFormat
        case appSendsLoadedEvent, connection, networkAddress
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let productType = try container.decode(String.self, forKey: .productType)
        let version = try container.decodeIfPresent(String.self, forKey: .productVersion)
        let base =
            Self.preset(productType: productType, iOSVersion: version)
            ?? VirtualDeviceProfile(
                name: productType, productType: productType, productVersion: version ?? "15.8",
                buildVersion: "", cpuArchitecture: "arm64", deviceName: productType,
                deviceClass: productType.hasPrefix("iPhone") ? "iPhone" : "iPad", hardwareModel: "",
                screenWidth: 1536, screenHeight: 2048)
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? base.name
        udid = try container.decodeIfPresent(String.self, forKey: .udid)
        self.productType = productType
        productVersion = base.productVersion
        buildVersion = try container.decodeIfPresent(String.self, forKey: .buildVersion) ?? base.buildVersion
        cpuArchitecture =
            try container.decodeIfPresent(String.self, forKey: .cpuArchitecture) ?? base.cpuArchitecture
        deviceName = try container.decodeIfPresent(String.self, forKey: .deviceName) ?? base.deviceName
        deviceClass = try container.decodeIfPresent(String.self, forKey: .deviceClass) ?? base.deviceClass
        hardwareModel =
            try container.decodeIfPresent(String.self, forKey: .hardwareModel) ?? base.hardwareModel
        screenWidth = try container.decodeIfPresent(Int.self, forKey: .screenWidth) ?? base.screenWidth
        screenHeight = try container.decodeIfPresent(Int.self, forKey: .screenHeight) ?? base.screenHeight
        pairing = try container.decodeIfPresent(VirtualPairingMode.self, forKey: .pairing) ?? base.pairing
        faults = try container.decodeIfPresent([VirtualFault].self, forKey: .faults) ?? []
        screenshotFormat = try container.decodeIfPresent(ImageFormat.self, forKey: .screenshotFormat)
        appSendsLoadedEvent = try container.decodeIfPresent(Bool.self, forKey: .appSendsLoadedEvent) ?? false
        connection = try container.decodeIfPresent(VirtualConnection.self, forKey: .connection) ?? .usb
        networkAddress = try container.decodeIfPresent(String.self, forKey: .networkAddress)
    }

    /// Whether usbmuxd lists a USB entry for this device.
    public var isOnUSB: Bool { connection != .network }
    /// Whether usbmuxd lists a Network entry for this device.
    public var isOnNetwork: Bool { connection != .usb }

    /// iOS major version (9 for "9.3.5").
    public var majorVersion: Int { Int(productVersion.split(separator: ".").first ?? "0") ?? 0 }

    /// The screenshot container this device sends.
    public var effectiveScreenshotFormat: ImageFormat {
        screenshotFormat ?? (majorVersion <= 8 ? .tiff : .png)
    }
}
