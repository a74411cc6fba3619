import DeployModel
import Foundation
import HADeployCore
import MobileDevice

extension USBDriver {
    /// Lockdown's battery and disk_usage domains, installation_proxy's record of the app, the Developer
    /// Disk Image's mount (gone after a reboot), debugserver's process list where the image is still
    /// mounted, and the app's log through house_arrest. Lockdown has no boot time.
    public func facts(_ query: StatusQuery) async -> DeviceFacts {
        let device: USBDevice
        let connected: ConnectedDevice
        do {
            connected = try await connectForStatus()
            device = try await current()
        } catch {
            return .unreachable(SystemErrorText.message(error))
        }
        let read: USBStatusFacts
        do {
            read = try await device.statusFacts(bundleID: query.bundleID)
        } catch {
            // Reached, then refused (locked, a service down): what it said, for each fact.
            let reason = SystemErrorText.message(error)
            var facts = DeviceFacts.unreachable(reason)
            facts.device = connected
            facts.unreachable = nil
            facts.appLog = await appLog(query)
            return facts
        }
        let installed: Fact<InstalledBuild?> =
            query.bundleID == nil
            ? .unavailable("which app is unknown: deploy once, or set BUNDLE_ID")
            : .known(
                read.app.map {
                    InstalledBuild(
                        marketingVersion: $0.shortVersion ?? "?", buildNumber: $0.bundleVersion ?? "?")
                })
        let running: Fact<Bool> =
            read.running.map { .known($0) } ?? .unavailable(read.runningUnknown ?? "unknown")
        let battery: Fact<BatteryState> =
            read.batteryLevel.map {
                .known(
                    BatteryState(
                        level: $0, charging: read.charging ?? false, externalPower: read.externalConnected))
            } ?? .unavailable("the device did not report com.apple.mobile.battery")
        let storage: Fact<StorageState> =
            read.dataAvailable.map {
                .known(StorageState(availableBytes: $0, capacityBytes: read.dataCapacity))
            }
            ?? .unavailable("the device did not report com.apple.disk_usage")
        let boot: Fact<BootState> =
            read.developerImageMounted.map { .known(BootState(developerImageMounted: $0)) }
            ?? .unavailable(
                "lockdown gives no boot time, and iOS \(read.info.productVersion) has no Developer Disk Image "
                    + "mount to tell a reboot by")
        let profile: Fact<ProfileState?> =
            query.bundleID.map { bundleID in
                read.profiles.map {
                    .known(ProfileState.covering(bundleID: bundleID, udid: connected.udid, in: $0))
                } ?? .unavailable(read.profilesUnknown ?? "the device did not list its profiles")
            } ?? .unavailable("which app is unknown: deploy once, or set BUNDLE_ID")
        var device2 = connected
        device2.iosVersion = read.info.productVersion.description
        return DeviceFacts(
            device: device2, installed: installed, running: running,
            appLog: read.app == nil && query.bundleID != nil ? .known(nil) : await appLog(query),
            battery: battery, storage: storage, boot: boot, profile: profile)
    }
}

extension USBDriver {
    /// How long a status waits before it tries a connection that broke once more.
    static let statusRetryPause: Duration = .milliseconds(300)

    /// The connection for a status, with one more try after a moment when it broke (usbmuxd or
    /// lockdownd dropping it, a device re-enumerating on USB, a Wi-Fi hiccup): a status is one read
    /// per device, and a device that answers a moment later is not unreachable. A device usbmuxd did
    /// not list in time is not tried again (its deadline is spent, and the reason names what it lists).
    func connectForStatus() async throws -> ConnectedDevice {
        do {
            return try await connect()
        } catch let error as MobileDeviceError
            where error.isTransient && error.kind != .cancelled && error.step != "usbmuxd_get_device_list"
        {
            try await options.clock.sleep(for: Self.statusRetryPause)
            return try await connect()
        }
    }
}
