import Foundation

/// Reads devicectl's `--json-output` files.
///
/// Every file is an envelope `{"info": {"outcome": "success"|"failed", "jsonVersion": 2, "commandType",
/// ...}, "result": {...}}`, with `"error": {"code", "domain", "userInfo"}` instead of `result` on failure.
/// userInfo values are typed wrappers (`{"string": "..."}`), so both wrapped and plain strings are read.
public enum DevicectlOutputParser {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// devicectl's own message (NSLocalizedDescription, plus the failure reason when there is one).
        public var message: String
        public var domain: String?
        public var code: Int?

        public var description: String {
            message + (domain.map { " (\($0) \(code.map(String.init) ?? "?"))" } ?? "")
        }
    }

    public struct Malformed: Error, CustomStringConvertible, Sendable {
        public var reason: String
        public var description: String { "devicectl JSON output: \(reason)" }
    }

    /// The `result` object, or the reported error as `Failure`.
    public static func result(_ data: Data) throws -> [String: Any] {
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw Malformed(reason: "not a JSON object (\(data.count) bytes)")
        }
        let outcome = (root["info"] as? [String: Any])?["outcome"] as? String
        if let error = root["error"] as? [String: Any] {
            throw failure(error)
        }
        guard outcome == nil || outcome == "success", let result = root["result"] as? [String: Any] else {
            throw Malformed(reason: "outcome \(outcome ?? "missing") without a result or an error")
        }
        return result
    }

    static func failure(_ error: [String: Any]) -> Failure {
        let info = error["userInfo"] as? [String: Any] ?? [:]
        var parts: [String] = []
        for key in ["NSLocalizedDescription", "NSLocalizedFailureReason", "NSLocalizedRecoverySuggestion"] {
            if let text = string(info[key]), !parts.contains(text) { parts.append(text) }
        }
        let underlying = (info["NSUnderlyingError"] as? [String: Any])?["error"] as? [String: Any]
        if parts.isEmpty, let underlying {
            return failure(underlying)
        }
        // SpringBoard's refusal to open an app on a locked device is the underlying error of
        // CoreDevice's "failed to launch": it is the one named, so the reason says "Locked".
        if let underlying, error["domain"] as? String != lockedDomain, isLocked(underlying) {
            var inner = failure(underlying)
            inner.message = parts.joined(separator: " ") + " " + inner.message
            return inner
        }
        return Failure(
            message: parts.isEmpty
                ? "devicectl reported an error without a description" : parts.joined(separator: " "),
            domain: error["domain"] as? String, code: error["code"] as? Int)
    }

    static let lockedDomain = "FBSOpenApplicationErrorDomain"

    /// `FBSOpenApplicationErrorDomain` 7 (BSErrorCodeDescription "Locked"), at any depth.
    static func isLocked(_ error: [String: Any]) -> Bool {
        let info = error["userInfo"] as? [String: Any] ?? [:]
        if error["domain"] as? String == lockedDomain,
            error["code"] as? Int == 7 || string(info["BSErrorCodeDescription"]) == "Locked"
        {
            return true
        }
        guard let underlying = (info["NSUnderlyingError"] as? [String: Any])?["error"] as? [String: Any]
        else { return false }
        return isLocked(underlying)
    }

    static func string(_ value: Any?) -> String? {
        if let text = value as? String { return text }
        if let wrapped = value as? [String: Any], let text = wrapped["string"] as? String { return text }
        return nil
    }

    /// `list devices`.
    public static func devices(_ data: Data) throws -> [DevicectlDevice] {
        let result = try result(data)
        guard let entries = result["devices"] as? [[String: Any]] else {
            throw Malformed(reason: "no result.devices list")
        }
        return try entries.map(device)
    }

    /// `device info details`: the result is one device object.
    public static func details(_ data: Data) throws -> DevicectlDevice {
        try device(try result(data))
    }

    /// `device install app`: the bundle ids it reports installed.
    public static func installedBundleIDs(_ data: Data) throws -> [String] {
        let result = try result(data)
        guard let apps = result["installedApplications"] as? [[String: Any]] else {
            throw Malformed(reason: "no result.installedApplications list")
        }
        return apps.compactMap { $0["bundleID"] as? String }
    }

    /// `device process launch`: the new process id.
    public static func launchedProcessID(_ data: Data) throws -> Int {
        let result = try result(data)
        guard let process = result["process"] as? [String: Any],
            let pid = process["processIdentifier"] as? Int
        else {
            throw Malformed(reason: "no result.process.processIdentifier")
        }
        return pid
    }

    static func device(_ entry: [String: Any]) throws -> DevicectlDevice {
        guard let identifier = entry["identifier"] as? String else {
            throw Malformed(reason: "a device without an identifier")
        }
        let device = entry["deviceProperties"] as? [String: Any] ?? [:]
        let hardware = entry["hardwareProperties"] as? [String: Any] ?? [:]
        let connection = entry["connectionProperties"] as? [String: Any] ?? [:]
        return DevicectlDevice(
            identifier: identifier, udid: hardware["udid"] as? String,
            name: device["name"] as? String ?? hardware["marketingName"] as? String ?? identifier,
            productType: hardware["productType"] as? String,
            marketingName: hardware["marketingName"] as? String,
            platform: hardware["platform"] as? String, osVersion: device["osVersionNumber"] as? String,
            reality: hardware["reality"] as? String, transportType: connection["transportType"] as? String,
            tunnelState: connection["tunnelState"] as? String,
            pairingState: connection["pairingState"] as? String,
            developerModeStatus: device["developerModeStatus"] as? String,
            cpuType: (hardware["cpuType"] as? [String: Any])?["name"] as? String)
    }
}
