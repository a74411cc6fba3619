import Foundation
import HADeployCore

/// com.apple.mobile.installation_proxy (PROTOCOL.md §3): Lookup, Browse, Install/Upgrade, Uninstall.
/// Every command is one request followed by status messages until `Status: Complete` or `Error`.
struct InstallationProxy {
    static let service = "com.apple.mobile.installation_proxy"
    let connection: PropertyListConnection
    let session: DeviceSession

    static func start(_ session: DeviceSession, lockdown: LockdownClient, timeouts: USBTimeouts) async throws
        -> InstallationProxy
    {
        let descriptor = try await session.startService(service, on: lockdown, timeouts: timeouts)
        let connection = try await session.run("connect \(service)", within: timeouts.request) {
            try PropertyListConnection(
                device: session.handle, descriptor: descriptor, identity: session.identity)
        }
        return InstallationProxy(connection: connection, session: session)
    }

    /// The apps with these bundle ids that are installed (absent ids are simply missing).
    func lookup(_ bundleIDs: [String], timeouts: USBTimeouts) async throws -> [String: PlistValue] {
        let command = PlistValue.dictionary([
            "Command": .string("Lookup"),
            "ClientOptions": .dictionary([
                "ApplicationType": .string("Any"),
                "BundleIDs": .array(bundleIDs.map(PlistValue.string)),
                "ReturnAttributes": .array(
                    [
                        "CFBundleIdentifier", "CFBundleExecutable", "CFBundleShortVersionString",
                        "CFBundleVersion",
                        "CFBundleDisplayName", "Path", "Container",
                    ].map(PlistValue.string)),
            ]),
        ])
        var result: [String: PlistValue] = [:]
        try await perform(command, name: "Lookup", budget: timeouts.request) { message in
            if let found = message["LookupResult"]?.dictionary { result.merge(found) { $1 } }
        }
        return result
    }

    /// User apps.
    func browse(timeouts: USBTimeouts) async throws -> [PlistValue] {
        let command = PlistValue.dictionary([
            "Command": .string("Browse"),
            "ClientOptions": .dictionary(["ApplicationType": .string("User")]),
        ])
        var apps: [PlistValue] = []
        try await perform(command, name: "Browse", budget: timeouts.request) { message in
            if let page = message["CurrentList"]?.array { apps.append(contentsOf: page) }
        }
        return apps
    }

    /// Install or Upgrade of a package already uploaded to `packagePath` (relative to the AFC root).
    func install(
        packagePath: String, options: [String: PlistValue], upgrade: Bool, timeouts: USBTimeouts,
        status: (String, Int?) -> Void
    ) async throws {
        let name = upgrade ? "Upgrade" : "Install"
        let command = PlistValue.dictionary([
            "Command": .string(name), "PackagePath": .string(packagePath),
            "ClientOptions": .dictionary(options),
        ])
        try await perform(command, name: name, budget: timeouts.install) { message in
            if let text = message["Status"]?.string {
                status(text, message["PercentComplete"]?.integer.map { Int($0) })
            }
        }
    }

    func uninstall(_ bundleID: String, timeouts: USBTimeouts) async throws {
        let command = PlistValue.dictionary([
            "Command": .string("Uninstall"), "ApplicationIdentifier": .string(bundleID),
        ])
        try await perform(command, name: "Uninstall", budget: timeouts.install) { _ in }
    }

    /// Sends `command` and reads status messages until Complete, an Error, or the deadline. Each
    /// receive waits at most 1 s in the library, so the deadline is checked between them and a
    /// silent device (installd can go quiet forever, PROTOCOL.md §12.9) cannot hold us.
    private func perform(
        _ command: PlistValue, name: String, budget: Duration, onMessage: (PlistValue) -> Void
    ) async throws {
        let step = "installation_proxy \(name)"
        let clock = session.clock
        let deadline = clock.deadline(after: budget)
        let connection = self.connection
        try await session.run(step, within: budget) { try connection.send(command, step: step) }
        var lastStatus = "no status yet"
        var lastProgress = clock.instant()
        while true {
            guard clock.instant() < deadline else {
                // A device still reporting progress is slow; one that went quiet has stopped, and a
                // longer deadline would not help.
                let quiet = clock.elapsed(since: lastProgress)
                let stopped = quiet >= min(.seconds(20), budget / 2)
                throw MobileDeviceError(
                    .deadlineExceeded, step: step, device: session.identity,
                    reason: "not complete within \(budget.secondsText) (last status: \(lastStatus)); "
                        + (stopped
                            ? "the device reported no progress for the last \(quiet.secondsText): it stopped, "
                                + "it is not merely slow"
                            : "it was still reporting progress: the device or link is slow"),
                    nextStep: stopped
                        ? "Unlock the device and check it is not busy installing something else; replug it "
                            + "and retry."
                        : "Raise timeouts.install in devices.yaml for this device (a large app on a slow link).",
                    isTransient: true)
            }
            let message = try await session.run(step, within: .seconds(15)) {
                try connection.receive(timeoutMilliseconds: 1000, step: step)
            }
            guard let message else { continue }
            if let error = message["Error"]?.string {
                throw Self.failure(
                    name: name, error: error, description: message["ErrorDescription"]?.string,
                    detail: message["ErrorDetail"]?.integer, device: session.identity)
            }
            onMessage(message)
            lastProgress = clock.instant()
            let status = message["Status"]?.string
            if let status {
                lastStatus = status + (message["PercentComplete"]?.integer.map { " \($0)%" } ?? "")
            }
            if status == "Complete" { return }
        }
    }

    static func failure(
        name: String, error: String, description: String?, detail: Int64?, device: DeviceIdentity
    )
        -> MobileDeviceError
    {
        var reason = error
        if let detail { reason += String(format: " (0x%08llx)", UInt64(UInt32(truncatingIfNeeded: detail))) }
        if let description, !description.isEmpty { reason += ": \(description)" }
        let next: String
        switch error {
        case "ApplicationVerificationFailed":
            next =
                "Sign the app with a certificate and a provisioning profile that include this device's UDID, "
                + "then rebuild."
        case "IncorrectArchitecture":
            next = "Build the app with a slice for this device's CPU (ARCHS), then rebuild."
        case "DeviceOSVersionTooLow":
            next = "Lower the app's deployment target (IPHONEOS_DEPLOYMENT_TARGET) or update the device."
        case "DeviceFamilyNotSupported":
            next = "Add this device family to TARGETED_DEVICE_FAMILY (1 iPhone, 2 iPad), then rebuild."
        case "PackageInspectionFailed", "PackageExtractionFailed", "MissingBundleExecutable":
            next = "The package is damaged or incomplete: rebuild it and deploy again."
        default:
            next = "Fix what the device reports, then deploy again."
        }
        return MobileDeviceError(
            .installFailed, step: "installation_proxy \(name)", device: device, reason: reason, nextStep: next
        )
    }
}

extension USBInstalledApp {
    init?(_ value: PlistValue) {
        guard let identifier = value["CFBundleIdentifier"]?.string else { return nil }
        self.init(
            bundleIdentifier: identifier, displayName: value["CFBundleDisplayName"]?.string,
            shortVersion: value["CFBundleShortVersionString"]?.string,
            bundleVersion: value["CFBundleVersion"]?.string,
            executable: value["CFBundleExecutable"]?.string, path: value["Path"]?.string,
            container: value["Container"]?.string)
    }
}
