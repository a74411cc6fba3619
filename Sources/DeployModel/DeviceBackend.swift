/// Which usbmuxd a USB device is reached through. libusbmuxd reads one address per process, so a
/// run drives each route in a process of its own (see `DeploySession`).
public enum USBRoute: Sendable, Hashable, Encodable, CustomStringConvertible {
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
}

/// How hadeploy drives one device, decided by the planner from the device's transport, this host
/// and the topology. The executor picks the driver from this and nothing else.
public enum DeviceBackend: Sendable, Hashable, Encodable, CustomStringConvertible {
    /// libimobiledevice through a usbmuxd, by its USB entry or (Wi-Fi) its Network entry.
    case usb(USBRoute, lookup: USBLookup = .usb)
    /// A jailbroken device over SSH; with a USB route when it may also be plugged in.
    case ssh(fallback: USBRoute?)
    /// `xcrun simctl` (macOS).
    case simctl
    /// `rosettasim-ctl` (macOS, x86_64 legacy runtimes).
    case rosettaSim
    /// `xcrun devicectl` (iOS 17+, macOS).
    case devicectl
    /// iOS 17+ from Linux: install over usbmuxd, launch and screenshot through pymobiledevice3's tunnel.
    case pymobiledevice3(USBRoute)
    /// This Mac running the Mac Catalyst build: `defaults`, `osascript`, `killall`, `open` (macOS).
    case mac

    public var name: String {
        switch self {
        case .usb: return "usb"
        case .ssh: return "ssh"
        case .simctl: return "simctl"
        case .rosettaSim: return "rosettasim"
        case .devicectl: return "devicectl"
        case .pymobiledevice3: return "pymobiledevice3"
        case .mac: return "mac"
        }
    }

    /// The usbmuxd this backend needs, if any: the executor runs each distinct one in its own process.
    public var usbRoute: USBRoute? {
        switch self {
        case .usb(let route, _), .pymobiledevice3(let route): return route
        case .ssh(let fallback): return fallback
        case .simctl, .rosettaSim, .devicectl, .mac: return nil
        }
    }

    /// Driven through a virtual twin's usbmuxd (`--virtual`): the twin's UDID stands for the device's.
    public var isVirtualTwin: Bool {
        switch self {
        case .usb(.virtual, _), .pymobiledevice3(.virtual): return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .usb(let route, .usb): return "usb via \(route)"
        case .usb(let route, .network): return "Wi-Fi via \(route) (its network lookup)"
        case .ssh(let fallback): return "ssh" + (fallback.map { " (fallback: usb via \($0))" } ?? "")
        case .simctl: return "xcrun simctl"
        case .rosettaSim: return "rosettasim-ctl"
        case .devicectl: return "xcrun devicectl"
        case .pymobiledevice3(let route): return "pymobiledevice3 (install via \(route))"
        case .mac: return "this Mac (Mac Catalyst)"
        }
    }

    /// The transport as results show it: the backend's name, "usb (Wi-Fi)" over the network lookup.
    public var label: String {
        lookup == .network ? "\(name) (Wi-Fi)" : name
    }

    /// The usbmuxd entry used (Wi-Fi devices are reached through the Network one).
    public var lookup: USBLookup {
        if case .usb(_, let lookup) = self { return lookup }
        return .usb
    }

    enum CodingKeys: String, CodingKey { case kind, usbmuxd, lookup, fallback }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .kind)
        switch self {
        case .usb(let route, let lookup):
            try container.encode(route, forKey: .usbmuxd)
            try container.encode(lookup, forKey: .lookup)
        case .pymobiledevice3(let route): try container.encode(route, forKey: .usbmuxd)
        case .ssh(let fallback): try container.encodeIfPresent(fallback, forKey: .fallback)
        case .simctl, .rosettaSim, .devicectl, .mac: break
        }
    }
}
