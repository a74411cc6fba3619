import Foundation

/// One device from `pymobiledevice3 usbmux list` (lockdown values, JSON list).
public struct UsbmuxDevice: Sendable, Hashable, Codable {
    public var udid: String
    public var name: String?
    public var productType: String?
    public var productVersion: String?
    /// `USB` or `Network`.
    public var connectionType: String?
    public var deviceClass: String?

    public var majorVersion: Int { Int(productVersion?.split(separator: ".").first ?? "") ?? 0 }
}

/// One app from `pymobiledevice3 apps list` (installation_proxy's Info.plist values).
public struct InstalledApp: Sendable, Hashable, Codable {
    public var bundleID: String
    public var shortVersion: String?
    public var buildVersion: String?
    public var executable: String?
}

/// Reads pymobiledevice3's JSON output, and the JSON tunneld serves on 127.0.0.1:49151.
public enum PyMobileDevice3Parser {
    public struct Malformed: Error, CustomStringConvertible, Sendable {
        public var reason: String
        public var description: String { "pymobiledevice3 output: \(reason)" }
    }

    /// `usbmux list`: `[{"UniqueDeviceID", "DeviceName", "ProductType", "ProductVersion", "ConnectionType", ...}]`.
    public static func devices(_ data: Data) throws -> [UsbmuxDevice] {
        guard let entries = (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]] else {
            throw Malformed(reason: "usbmux list did not print a JSON list")
        }
        return entries.compactMap { entry in
            guard let udid = entry["UniqueDeviceID"] as? String ?? entry["Identifier"] as? String else {
                return nil
            }
            return UsbmuxDevice(
                udid: udid, name: entry["DeviceName"] as? String,
                productType: entry["ProductType"] as? String,
                productVersion: entry["ProductVersion"] as? String,
                connectionType: entry["ConnectionType"] as? String,
                deviceClass: entry["DeviceClass"] as? String)
        }
    }

    /// `apps list`: `{"<bundle id>": {"CFBundleShortVersionString", "CFBundleVersion", ...}}`.
    public static func apps(_ data: Data) throws -> [String: InstalledApp] {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw Malformed(reason: "apps list did not print a JSON object")
        }
        var result: [String: InstalledApp] = [:]
        for (bundleID, value) in object {
            let info = value as? [String: Any] ?? [:]
            result[bundleID] = InstalledApp(
                bundleID: bundleID, shortVersion: info["CFBundleShortVersionString"] as? String,
                buildVersion: info["CFBundleVersion"] as? String,
                executable: info["CFBundleExecutable"] as? String)
        }
        return result
    }

    /// tunneld's `GET /`: `{"<udid>": [{"tunnel-address", "tunnel-port", "interface"}, ...]}`.
    public static func tunneledUDIDs(_ data: Data) throws -> Set<String> {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw Malformed(reason: "tunneld did not answer with a JSON object")
        }
        return Set(object.compactMap { udid, tunnels in ((tunnels as? [Any])?.isEmpty ?? true) ? nil : udid })
    }

    /// `dvt launch` prints `Process launched with pid 1234`.
    public static func launchedProcessID(_ output: String) -> Int? {
        guard let range = output.range(of: "launched with pid ") else { return nil }
        return Int(output[range.upperBound...].prefix { $0.isNumber })
    }
}
