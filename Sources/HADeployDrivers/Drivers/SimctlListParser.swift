import Foundation

/// Parses `xcrun simctl list -j devices` (also what `rosettasim-ctl list -j devices` passes through).
///
/// Shape (Xcode 10.1 and later): `{"devices": {"<runtime identifier>": [{"udid", "name", "state",
/// "isAvailable", "availabilityError"?, "deviceTypeIdentifier", "dataPath", ...}]}}`. Xcodes before
/// 10.1 keyed runtimes by display name (`"iOS 12.1"`) and gave `"availability": "(available)"` instead
/// of `isAvailable`; both are accepted because the legacy runtimes are often driven from old Xcodes.
public enum SimctlListParser {
    public struct Failure: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { "simctl list output: \(reason)" }
    }

    /// The simulators, sorted by runtime then name then UDID so the choice among equals is stable.
    public static func parse(_ data: Data) throws -> [SimulatorDevice] {
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw Failure(reason: "not JSON (\(data.count) bytes)")
        }
        guard let object = root as? [String: Any], let runtimes = object["devices"] as? [String: Any] else {
            throw Failure(reason: "no \"devices\" object")
        }
        var result: [SimulatorDevice] = []
        for (runtime, value) in runtimes {
            guard let entries = value as? [[String: Any]] else {
                throw Failure(reason: "runtime \(runtime) is not a list of devices")
            }
            let (platform, version) = runtimeParts(runtime)
            for entry in entries {
                guard let udid = entry["udid"] as? String, let name = entry["name"] as? String else {
                    throw Failure(reason: "a device of \(runtime) has no udid or name")
                }
                result.append(
                    SimulatorDevice(
                        udid: udid, name: name, state: entry["state"] as? String ?? "Unknown",
                        isAvailable: availability(entry),
                        availabilityError: entry["availabilityError"] as? String,
                        runtimeIdentifier: runtime, platform: platform, version: version,
                        deviceTypeIdentifier: entry["deviceTypeIdentifier"] as? String))
            }
        }
        return result.sorted {
            ($0.runtimeIdentifier, $0.name, $0.udid) < ($1.runtimeIdentifier, $1.name, $1.udid)
        }
    }

    static func availability(_ entry: [String: Any]) -> Bool {
        if let flag = entry["isAvailable"] as? Bool { return flag }
        if let text = entry["isAvailable"] as? String { return text == "YES" || text == "true" }
        if let text = entry["availability"] as? String { return text == "(available)" }
        return true
    }

    /// `com.apple.CoreSimulator.SimRuntime.iOS-17-5` or `iOS 17.5` → (`iOS`, `17.5`).
    public static func runtimeParts(_ runtime: String) -> (platform: String, version: String) {
        let prefix = "com.apple.CoreSimulator.SimRuntime."
        if runtime.hasPrefix(prefix) {
            let parts = runtime.dropFirst(prefix.count).split(separator: "-")
            guard let platform = parts.first else { return (runtime, "") }
            return (String(platform), parts.dropFirst().joined(separator: "."))
        }
        let words = runtime.split(separator: " ")
        if words.count == 2 { return (String(words[0]), String(words[1])) }
        return (runtime, "")
    }
}
