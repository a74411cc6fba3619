/// Which usbmuxd a USB device is reached through. libusbmuxd reads one address per process, so a
/// run drives each route in a process of its own (see `DeploySession`).
public enum USBRoute: Sendable, Hashable, Codable, CustomStringConvertible {
    /// This machine's usbmuxd (or `USBMUXD_SOCKET_ADDRESS` when set).
    case local(address: String?)
    /// hadeploy's virtual twins (`--virtual`, `hadeploy virtual`).
    case virtual(address: String)
    /// Another machine's usbmuxd forwarded over SSH (`usb_host: ssh://user@nas[/socket]`).
    case usbHost(String)

    public var description: String {
        switch self {
        case .local(let address): return address.map { "usbmuxd at \($0)" } ?? "the local usbmuxd"
        case .virtual(let address): return "the virtual usbmuxd at \(address)"
        case .usbHost(let url): return "usbmuxd on \(url) (over SSH)"
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .local(let address): try container.encode(address.map { "local:\($0)" } ?? "local")
        case .virtual(let address): try container.encode("virtual:\(address)")
        case .usbHost(let url): try container.encode(url)
        }
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        if text == "local" {
            self = .local(address: nil)
        } else if text.hasPrefix("local:") {
            self = .local(address: String(text.dropFirst("local:".count)))
        } else if text.hasPrefix("virtual:") {
            self = .virtual(address: String(text.dropFirst("virtual:".count)))
        } else {
            self = .usbHost(text)
        }
    }
}

/// How hadeploy drives one device, as the plan records it: which backend (`kind`, one of the types
/// registered in HADeployDrivers' `Backends`), the usbmuxd it goes through, and the backend's own
/// settings as data. The planner writes it; the executor builds the device's driver from it alone.
public struct PlannedBackend: Sendable, Hashable, Codable {
    /// The backend's name (`usb`, `ssh`, `simctl`, `rosettasim`, `devicectl`, `pymobiledevice3`, `mac`).
    public var kind: String
    /// The usbmuxd this backend needs, if any: the executor runs each distinct one in its own process.
    public var usbRoute: USBRoute?
    /// The usbmuxd entry used (Wi-Fi devices are reached through the Network one).
    public var lookup: USBLookup
    /// The backend's configuration, decoded by the backend itself (`Backend.Configuration`).
    public var settings: PlanValue
    /// A Wi-Fi device's host name or address from devices.yaml (`address:`): looked for there as
    /// well as over multicast DNS.
    public var address: String?

    public init(
        kind: String, usbRoute: USBRoute?, lookup: USBLookup = .usb, settings: PlanValue,
        address: String? = nil
    ) {
        self.kind = kind
        self.usbRoute = usbRoute
        self.lookup = lookup
        self.settings = settings
        self.address = address
    }

    /// Driven through a virtual twin's usbmuxd (`--virtual`): the twin's UDID stands for the device's.
    public var isVirtualTwin: Bool {
        if case .virtual? = usbRoute { return true }
        return false
    }

    /// The transport as results show it: the backend's name, "usb (Wi-Fi)" over the network lookup.
    public var label: String {
        lookup == .network ? "\(kind) (Wi-Fi)" : kind
    }

    enum CodingKeys: String, CodingKey { case kind, usbmuxd, lookup, settings, address }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encodeIfPresent(usbRoute, forKey: .usbmuxd)
        try container.encode(lookup, forKey: .lookup)
        try container.encode(settings, forKey: .settings)
        try container.encodeIfPresent(address, forKey: .address)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(String.self, forKey: .kind)
        usbRoute = try container.decodeIfPresent(USBRoute.self, forKey: .usbmuxd)
        lookup = try container.decodeIfPresent(USBLookup.self, forKey: .lookup) ?? .usb
        settings = try container.decode(PlanValue.self, forKey: .settings)
        address = try container.decodeIfPresent(String.self, forKey: .address)
    }
}
