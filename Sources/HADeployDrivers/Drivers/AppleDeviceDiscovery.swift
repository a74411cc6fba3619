import DeployModel
import DeviceSpec
import Foundation
import HADeployCore

/// A simulator or iOS 17+ device found on this host, with the backend that would drive it.
public struct DiscoveredAppleDevice: Sendable, Hashable, Codable {
    public var udid: String
    public var name: String
    public var kind: DeviceKind
    /// `iOS 17.5`.
    public var os: String
    /// `Booted`/`Shutdown` for simulators, `connected`/`wired`... for devices, when known.
    public var state: String?
    /// `simctl`, `rosettasim`, `devicectl`, `pymobiledevice3` or `usb`.
    public var backend: String
    /// What is missing before that backend can drive it, if anything.
    public var note: String?
}

/// What `hadeploy devices` shows for simulators and iOS 17+ devices.
public struct AppleDiscoveryReport: Sendable, Hashable, Codable {
    public var devices: [DiscoveredAppleDevice]
    /// Why a whole source could not be listed (no Xcode on Linux, pymobiledevice3 missing...).
    public var notes: [String]
}

/// Lists simulators (simctl) and iOS 17+ devices (devicectl on macOS, pymobiledevice3 on Linux).
/// Never throws: a source that cannot be listed becomes a note.
public struct AppleDeviceDiscovery: Sendable {
    public var host: HostPlatform
    public var runner: any ProcessRunner
    public var simctl: SimctlCommands
    public var devicectl: DevicectlCommands
    public var pymobiledevice3: PyMobileDevice3Commands
    /// Whether `ROSETTASIM_CTL` is set (legacy simulators need it).
    public var rosettaSimConfigured: Bool
    public var scratchDirectory: URL
    public var fileSystem: any FileSystem
    public var timeout: Duration

    public init(
        host: HostPlatform, runner: any ProcessRunner, simctl: SimctlCommands = .init(),
        devicectl: DevicectlCommands = .init(), pymobiledevice3: PyMobileDevice3Commands = .init(),
        rosettaSimConfigured: Bool, scratchDirectory: URL, fileSystem: any FileSystem,
        timeout: Duration = .seconds(30)
    ) {
        self.host = host
        self.runner = runner
        self.simctl = simctl
        self.devicectl = devicectl
        self.pymobiledevice3 = pymobiledevice3
        self.rosettaSimConfigured = rosettaSimConfigured
        self.scratchDirectory = scratchDirectory
        self.fileSystem = fileSystem
        self.timeout = timeout
    }

    /// The Xcode discovery asks (`DEVELOPER_DIR`): `XCODE_MODERN` (`.env` or the environment) when
    /// set, else none, i.e. `xcode-select`'s — which may be an old Xcode kept for armv7 builds,
    /// whose `xcrun` has no devicectl (Xcode 15+), so iOS 17+ devices would be missing.
    public static func developerDirectory(_ variables: [String: String]) -> String? {
        guard let xcode = variables["XCODE_MODERN"], !xcode.isEmpty else { return nil }
        if xcode.hasSuffix("/Contents/Developer") { return xcode }
        return (xcode.hasSuffix("/") ? String(xcode.dropLast()) : xcode) + "/Contents/Developer"
    }

    /// The same discovery with simctl and devicectl run from `developerDirectory`'s Xcode.
    public func using(developerDirectory: String?) -> AppleDeviceDiscovery {
        var discovery = self
        discovery.simctl.developerDir = developerDirectory
        discovery.devicectl.developerDir = developerDirectory
        return discovery
    }

    public func discover() async -> AppleDiscoveryReport {
        var report = AppleDiscoveryReport(devices: [], notes: [])
        if host == .macOS {
            await simulators(into: &report)
            await devicectlDevices(into: &report)
        } else {
            report.notes.append("simulators and devicectl need macOS with Xcode; not listed on this host")
            await pymobiledevice3Devices(into: &report)
        }
        return report
    }

    func simulators(into report: inout AppleDiscoveryReport) async {
        let invoker = ToolInvoker(
            runner: runner, tool: "xcrun simctl", device: "simulators", installHint: "install Xcode")
        do {
            let output = try await invoker.checked(simctl.listDevices(), step: "list", timeout: timeout)
            for sim in try SimctlListParser.parse(output.standardOutput)
            where sim.isAvailable && sim.platform == "iOS" {
                let legacy = sim.needsRosettaSim
                report.devices.append(
                    DiscoveredAppleDevice(
                        udid: sim.udid, name: sim.name, kind: .simulator, os: sim.runtimeName,
                        state: sim.state,
                        backend: legacy ? RosettaSimBackend.kind : SimctlBackend.kind,
                        note: legacy && !rosettaSimConfigured ? "set ROSETTASIM_CTL in .env" : nil))
            }
        } catch {
            report.notes.append("\(error)")
        }
    }

    func devicectlDevices(into report: inout AppleDiscoveryReport) async {
        let invoker = ToolInvoker(
            runner: runner, tool: "xcrun devicectl", device: "devices",
            installHint: "install Xcode 15 or later")
        let scratch = ScratchFolder(fileSystem: fileSystem, directory: scratchDirectory)
        do {
            let file = try scratch.newPath("hadeploy-devicectl", suffix: ".json")
            defer { scratch.remove(file) }
            let seconds = Int(clampingDouble: timeout.seconds)
            _ = try await invoker.checked(
                devicectl.listDevices(jsonOutput: file.path, timeout: seconds), step: "list",
                timeout: timeout + .seconds(15))
            guard let data = fileSystem.contents(atPath: file.path) else {
                throw AppleDriverError(
                    .unexpectedOutput, step: "list", device: "devices",
                    reason: "devicectl exited 0 but wrote no --json-output file")
            }
            // A paired Apple Watch, Apple TV or Mac is listed too (`hardwareProperties.platform`).
            for device in try DevicectlOutputParser.devices(data)
            where device.reality != "virtual" && (device.platform ?? "iOS") == "iOS" {
                let major = Int(device.osVersion?.split(separator: ".").first ?? "") ?? 0
                report.devices.append(
                    DiscoveredAppleDevice(
                        udid: device.udid ?? device.identifier, name: device.name, kind: .device,
                        os: "iOS \(device.osVersion ?? "?")",
                        state: device.tunnelState ?? device.transportType,
                        backend: major >= 17 ? DevicectlBackend.kind : USBBackend.kind,
                        note: device.developerModeStatus == "disabled" ? "turn on Developer Mode" : nil))
            }
        } catch {
            report.notes.append("\(error)")
        }
    }

    func pymobiledevice3Devices(into report: inout AppleDiscoveryReport) async {
        let invoker = ToolInvoker(
            runner: runner, tool: "pymobiledevice3", device: "iOS 17+ devices",
            installHint: PyMobileDevice3Driver.installHint)
        do {
            let output = try await invoker.checked(
                pymobiledevice3.listDevices(), step: "list", timeout: timeout,
                missing: (
                    "pymobiledevice3 is not installed, so iOS 17+ devices cannot be launched from Linux",
                    "\(PyMobileDevice3Driver.installHint) (no root, no tunneld: its own userspace tunnel)"
                ))
            for device in try PyMobileDevice3Parser.devices(output.standardOutput)
            where device.majorVersion >= 17 {
                report.devices.append(
                    DiscoveredAppleDevice(
                        udid: device.udid, name: device.name ?? device.udid, kind: .device,
                        os: "iOS \(device.productVersion ?? "?")", state: device.connectionType,
                        backend: "pymobiledevice3", note: nil))
            }
        } catch {
            report.notes.append("\(error)")
        }
    }
}
