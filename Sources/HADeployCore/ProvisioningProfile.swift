import Foundation

/// A development or ad hoc build's `embedded.mobileprovision`, as its plist says it (the CMS envelope
/// around it is opened by the reader of the artifact). A real iPad refuses, with
/// `ApplicationVerificationFailed` after the whole upload, a build whose profile does not list it,
/// has expired or was made for another app id: hadeploy checks the same before a byte is sent.
public struct ProvisioningProfile: Sendable, Hashable {
    public var name: String
    public var uuid: String
    public var teamIdentifiers: [String]
    public var expirationDate: Date?
    /// The devices it lists (hardware UDIDs); nil when it lists none (App Store, enterprise).
    public var provisionedDevices: [String]?
    /// An enterprise (in-house) profile: every device.
    public var provisionsAllDevices: Bool
    /// `Entitlements.application-identifier`: `TEAMID.bundle.id`, or a wildcard (`TEAMID.*`,
    /// `TEAMID.com.example.*`).
    public var applicationIdentifier: String?

    public init(
        name: String, uuid: String, teamIdentifiers: [String] = [], expirationDate: Date?,
        provisionedDevices: [String]?, provisionsAllDevices: Bool = false, applicationIdentifier: String?
    ) {
        self.name = name
        self.uuid = uuid
        self.teamIdentifiers = teamIdentifiers
        self.expirationDate = expirationDate
        self.provisionedDevices = provisionedDevices
        self.provisionsAllDevices = provisionsAllDevices
        self.applicationIdentifier = applicationIdentifier
    }

    /// The profile in a provisioning profile's plist (the CMS envelope's content); nil when it is
    /// not one.
    public init?(plist data: Data) {
        guard
            let values = try? PropertyListSerialization.propertyList(from: data, format: nil)
                as? [String: Any],
            let uuid = values["UUID"] as? String
        else { return nil }
        let entitlements = values["Entitlements"] as? [String: Any]
        self.init(
            name: values["Name"] as? String ?? "(unnamed)", uuid: uuid,
            teamIdentifiers: values["TeamIdentifier"] as? [String] ?? [],
            expirationDate: values["ExpirationDate"] as? Date,
            provisionedDevices: values["ProvisionedDevices"] as? [String],
            provisionsAllDevices: values["ProvisionsAllDevices"] as? Bool ?? false,
            applicationIdentifier: entitlements?["application-identifier"] as? String)
    }

    /// The profile as the developer portal writes its plist (the CMS envelope's content), made on
    /// `creationDate`: a development profile when it lists devices, `get-task-allow` with it.
    public func plist(creationDate: Date) throws -> Data {
        var entitlements: [String: Any] = ["get-task-allow": provisionedDevices != nil]
        if let applicationIdentifier {
            entitlements["application-identifier"] = applicationIdentifier
            entitlements["keychain-access-groups"] = [applicationIdentifier]
        }
        if let team = teamIdentifiers.first { entitlements["com.apple.developer.team-identifier"] = team }
        var values: [String: Any] = [
            "Name": name, "UUID": uuid, "TeamIdentifier": teamIdentifiers,
            "ApplicationIdentifierPrefix": teamIdentifiers, "CreationDate": creationDate, "Platform": ["iOS"],
            "Entitlements": entitlements, "Version": 1,
        ]
        if let expirationDate {
            values["ExpirationDate"] = expirationDate
            values["TimeToLive"] = max(0, Int(expirationDate.timeIntervalSince(creationDate) / 86_400))
        }
        if let provisionedDevices { values["ProvisionedDevices"] = provisionedDevices }
        if provisionsAllDevices { values["ProvisionsAllDevices"] = true }
        return try PropertyListValue.encode(values, .xml)
    }

    /// `'Name' (UUID)`, as messages name it.
    public var label: String { "'\(name)' (\(uuid))" }

    /// Why a device `udid` (a hardware UDID) refuses this profile for the app `bundleID` at `now`, with
    /// the fix; nil when it takes it.
    public func problem(udid: String, bundleID: String, now: Date) -> String? {
        if let expirationDate, expirationDate <= now {
            let day = ISO8601DateFormatter.string(
                from: expirationDate, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
            return "the build's provisioning profile \(label) expired on \(day): renew it in the developer "
                + "portal (or let Xcode's automatic signing do it) and rebuild"
        }
        if !provisionsAllDevices {
            let listed = (provisionedDevices ?? []).contains {
                $0.caseInsensitiveCompare(udid) == .orderedSame
            }
            if !listed {
                return "the build's provisioning profile \(label) does not list this device (UDID \(udid)): "
                    + "add the UDID to the profile in the developer portal (or build with automatic signing "
                    + "and the device connected), download it and rebuild"
            }
        }
        if let applicationIdentifier, !Self.matches(applicationIdentifier, bundleID: bundleID) {
            return
                "the build's provisioning profile \(label) is for the app id \(applicationIdentifier), not "
                + "\(bundleID): sign the build with a profile made for \(bundleID)"
        }
        return nil
    }

    /// Whether `applicationIdentifier` (`TEAMID.rest`) covers `bundleID`, as Apple matches them: the
    /// team prefix is dropped; `*` matches any id; `com.example.*` any id that starts with `com.example.`.
    public static func matches(_ applicationIdentifier: String, bundleID: String) -> Bool {
        guard let dot = applicationIdentifier.firstIndex(of: ".") else { return false }
        let pattern = String(applicationIdentifier[applicationIdentifier.index(after: dot)...])
        if pattern == "*" { return true }
        if pattern.hasSuffix("*") { return bundleID.hasPrefix(String(pattern.dropLast())) }
        return pattern == bundleID
    }

    /// Whether `udid` is a hardware UDID a profile lists (40 hex digits, or `00008xxx-` and 16 hex
    /// digits), not a CoreDevice or simulator id.
    public static func isHardwareUDID(_ udid: String) -> Bool {
        let hex = Set("0123456789abcdefABCDEF")
        if udid.count == 40 { return udid.allSatisfy(hex.contains) }
        let parts = udid.split(separator: "-", omittingEmptySubsequences: false)
        return parts.count == 2 && parts[0].count == 8 && parts[1].count == 16
            && parts.allSatisfy { $0.allSatisfy(hex.contains) }
    }
}
