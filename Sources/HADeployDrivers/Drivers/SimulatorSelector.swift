import Foundation

/// Which simulator devices.yaml means: a UDID, or a device type plus a runtime.
public struct SimulatorSelector: Sendable, Hashable {
    public var udid: String?
    /// `iPad (10th generation)`, or the identifier `com.apple.CoreSimulator.SimDeviceType.iPad-10th-generation`.
    public var deviceType: String?
    /// `iOS 17.5`, `17.5`, or `com.apple.CoreSimulator.SimRuntime.iOS-17-5`.
    public var runtime: String?

    public enum Choice: Sendable, Hashable {
        case found(SimulatorDevice)
        /// Why nothing fits, and what to do about it.
        case notFound(reason: String, fix: String)
    }

    /// Picks among `devices`: an available one, booted first (it is already the one in use).
    public func choose(from devices: [SimulatorDevice]) -> Choice {
        if let udid, !udid.isEmpty {
            guard let device = devices.first(where: { $0.udid.caseInsensitiveCompare(udid) == .orderedSame })
            else {
                return .notFound(
                    reason: "no simulator has UDID \(udid)",
                    fix: "check `xcrun simctl list devices`, or drop `udid:` and set "
                        + "`simulator_device_type`/`simulator_runtime` to pick one by name")
            }
            guard device.isAvailable else {
                return .notFound(
                    reason: "simulator \(device.name) (\(udid)) is unavailable"
                        + (device.availabilityError.map { ": \($0)" } ?? ""),
                    fix: "install its runtime (\(device.runtimeName)) or pick another simulator")
            }
            return .found(device)
        }
        guard let deviceType, !deviceType.isEmpty else {
            return .notFound(
                reason: "neither a UDID nor a simulator device type is configured",
                fix: "set `udid:` or `simulator_device_type:` (and `simulator_runtime:`) in devices.yaml")
        }
        let wantedType = Self.normalized(deviceType)
        let wantedRuntime = runtime.flatMap(Self.runtimeKey)
        let inRuntime = devices.filter { device in
            wantedRuntime.map { Self.runtimeKey(device.runtimeIdentifier) == $0 } ?? true
        }
        let matches = inRuntime.filter { device in
            Self.normalized(device.name) == wantedType
                || device.deviceTypeIdentifier.map {
                    Self.normalized($0) == wantedType || device.deviceType.map(Self.normalized) == wantedType
                } ?? false
        }
        // Booted first (it is the one in use), then a simulator named after the type over a renamed one.
        let usable = matches.filter(\.isAvailable).enumerated().min { a, b in
            (Self.rank(a.element, wantedType), a.offset) < (Self.rank(b.element, wantedType), b.offset)
        }
        if let usable { return .found(usable.element) }

        let runtimeText = runtime ?? "any runtime"
        if let broken = matches.first {
            return .notFound(
                reason: "the \(deviceType) simulator on \(runtimeText) is unavailable"
                    + (broken.availabilityError.map { ": \($0)" } ?? ""),
                fix: "install the \(broken.runtimeName) simulator runtime (Xcode › Settings › Components)")
        }
        let others = inRuntime.filter(\.isAvailable).map(\.name)
        let runtimeID = runtime.flatMap(Self.runtimeIdentifier) ?? "<runtime>"
        return .notFound(
            reason: "no \(deviceType) simulator on \(runtimeText)"
                + (others.isEmpty
                    ? (wantedRuntime == nil ? "" : " (no simulators of that runtime at all)")
                    : " (there: \(others.joined(separator: ", ")))"),
            fix: "create one: xcrun simctl create '\(deviceType)' '\(deviceType)' \(runtimeID)")
    }

    static func rank(_ device: SimulatorDevice, _ wantedType: String) -> Int {
        (device.isBooted ? 0 : 2) + (normalized(device.name) == wantedType ? 0 : 1)
    }

    /// Case, spaces and punctuation ignored: `iPad (10th generation)` matches `iPad-10th-generation`.
    static func normalized(_ text: String) -> String {
        let short = text.hasPrefix("com.apple.") ? String(text.split(separator: ".").last ?? "") : text
        return short.lowercased().filter { $0.isLetter || $0.isNumber }
    }

    /// `iOS 17.5`, `17.5`, `iOS-17-5`, or the full identifier → `ios:17.5`.
    static func runtimeKey(_ text: String) -> String? {
        var (platform, version) = SimctlListParser.runtimeParts(text)
        if version.isEmpty {
            // `17.5` alone means iOS; `iOS17.5` is how simctl create spells runtimes too.
            let digits = text.drop { !$0.isNumber }
            let letters = text.prefix { !$0.isNumber }.trimmingCharacters(
                in: CharacterSet(charactersIn: " -"))
            guard !digits.isEmpty else { return nil }
            platform = letters.isEmpty ? "iOS" : letters
            version = digits.replacingOccurrences(of: "-", with: ".")
        }
        var parts = version.split(separator: ".").map(String.init)
        while parts.count > 2, parts.last == "0" { parts.removeLast() }
        if parts.count == 1 { parts.append("0") }
        return platform.lowercased() + ":" + parts.joined(separator: ".")
    }

    /// `iOS 17.5` → `com.apple.CoreSimulator.SimRuntime.iOS-17-5`, for `simctl create` hints.
    static func runtimeIdentifier(_ text: String) -> String? {
        guard let key = runtimeKey(text) else { return nil }
        let parts = key.split(separator: ":")
        guard parts.count == 2 else { return nil }
        let platform = parts[0] == "ios" ? "iOS" : String(parts[0])
        return "com.apple.CoreSimulator.SimRuntime.\(platform)-"
            + parts[1].replacingOccurrences(of: ".", with: "-")
    }
}
