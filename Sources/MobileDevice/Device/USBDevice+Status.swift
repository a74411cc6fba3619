import Foundation
import HADeployCore
import HostCrypto

/// What a device says about itself and one app without anything being installed, mounted or
/// launched: lockdown's battery and disk_usage domains, installation_proxy's record of the app,
/// whether the Developer Disk Image is still mounted (it does not survive a reboot), and — only where
/// it already is — whether the app's process runs (debugserver `qfProcessInfo`).
public struct USBStatusFacts: Sendable, Equatable {
    public var info: USBDeviceInfo
    /// BatteryCurrentCapacity (0...100), BatteryIsCharging, ExternalConnected.
    public var batteryLevel: Int?
    public var charging: Bool?
    public var externalConnected: Bool?
    /// AmountDataAvailable and TotalDataCapacity in bytes.
    public var dataAvailable: Int64?
    public var dataCapacity: Int64?
    /// nil: the app is not installed.
    public var app: USBInstalledApp?
    /// nil on iOS 17+ (no legacy image), or when the device would not say.
    public var developerImageMounted: Bool?
    /// nil with the reason in `runningUnknown`.
    public var running: Bool?
    public var runningUnknown: String?
    /// The provisioning profiles installed on the device (misagent); nil with the reason in
    /// `profilesUnknown`.
    public var profiles: [ProvisioningProfile]?
    public var profilesUnknown: String?
}

extension USBDevice {
    /// One read-only pass over the device (see ``USBStatusFacts``).
    public func statusFacts(bundleID: String?) async throws -> USBStatusFacts {
        try await serialized {
            let (session, lockdown) = try await openLockdown()
            let info = try await Self.readInfo(lockdown: lockdown, session: session, timeouts: timeouts)
            let domains = try await session.run(
                "lockdownd_get_value battery, disk_usage", within: timeouts.request
            ) {
                () -> (battery: [String: PlistValue], disk: [String: PlistValue]) in
                let battery = (try? lockdown.value(domain: "com.apple.mobile.battery", key: nil))??.dictionary
                let disk = (try? lockdown.value(domain: "com.apple.disk_usage", key: nil))??.dictionary
                return (battery ?? [:], disk ?? [:])
            }
            var facts = USBStatusFacts(info: info)
            facts.batteryLevel = domains.battery["BatteryCurrentCapacity"]?.integer.map(Int.init)
            facts.charging = domains.battery["BatteryIsCharging"]?.bool
            facts.externalConnected = domains.battery["ExternalConnected"]?.bool
            facts.dataAvailable = domains.disk["AmountDataAvailable"]?.integer
            facts.dataCapacity = domains.disk["TotalDataCapacity"]?.integer
            if let bundleID {
                let proxy = try await InstallationProxy.start(session, lockdown: lockdown, timeouts: timeouts)
                facts.app = try await proxy.lookup([bundleID], timeouts: timeouts)[bundleID].flatMap(
                    USBInstalledApp.init)
                // The installed build's profile (its expiry) is the device's own: misagent lists it.
                do {
                    facts.profiles = try await Misagent.installedProfiles(
                        session, lockdown: lockdown, iOS: info.productVersion, timeouts: timeouts
                    ).compactMap { data in
                        (try? CMSEnvelope.content(of: data)).flatMap { ProvisioningProfile(plist: $0) }
                    }
                } catch {
                    facts.profilesUnknown = "misagent: \(error)"
                }
            }
            guard info.productVersion.major < 17 else {
                facts.runningUnknown =
                    "iOS \(info.productVersion) lists processes only through the developer tunnel"
                return facts
            }
            let mounter = try await session.startService(
                "com.apple.mobile.mobile_image_mounter", on: lockdown, timeouts: timeouts)
            let mounted = try await session.run("mobile_image_mounter_lookup_image", within: timeouts.request)
            {
                try ImageMounterClient(
                    device: session.handle, descriptor: mounter, identity: session.identity
                )
                .isDeveloperImageMounted()
            }
            facts.developerImageMounted = mounted
            guard let executable = facts.app?.executable, !executable.isEmpty else {
                facts.running = facts.app == nil ? false : nil
                if facts.app != nil {
                    facts.runningUnknown = "the device did not report the app's executable"
                }
                return facts
            }
            // Mounting the image to look would change the device: without it, the answer is unknown.
            guard mounted else {
                facts.runningUnknown =
                    "the Developer Disk Image is not mounted (the device restarted since a deploy)"
                return facts
            }
            let descriptor = try await session.startService(
                debugserverServices[0], on: lockdown, timeouts: timeouts)
            let budget = timeouts.request
            let clock = options.clock
            facts.running = try await session.run("debugserver qfProcessInfo \(executable)", within: budget) {
                let connection = try DebugServerConnection(
                    device: session.handle, descriptor: descriptor, identity: session.identity)
                return try DebugServerLauncher(
                    client: GDBRemoteClient(transport: connection, identity: session.identity, clock: clock),
                    identity: session.identity, redactor: .none
                ).isRunning(
                    processName: executable, deadline: clock.deadline(after: budget - .milliseconds(500)))
            }
            return facts
        }
    }
}
