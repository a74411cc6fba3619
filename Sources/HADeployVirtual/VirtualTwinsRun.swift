import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import HADeployKit
import Logging
import VirtualDevice

#if canImport(Glibc)
    import Glibc
#endif

/// Virtual twins started for one run (`--virtual`): the running usbmuxd, what the planner needs to
/// know about it, and the Developer Disk Images the twins accept. The CLI starts it before planning
/// and stops it after the deploy; the Kit only ever sees the `VirtualTwins` value.
public struct VirtualTwinsRun: Sendable {
    public let twins: VirtualTwins
    public let developerImages: URL
    let usbmuxd: VirtualUsbmuxd
    let jailbroken: [JailbreakTwinProcess]

    /// Starts a twin for each of `devices` that a virtual device can stand for. A twin this host cannot
    /// run (the jailbroken twin without its script, its packages or, not as root, user namespaces) makes
    /// the devices that need it "not available" with the reason and the fix; every other device still
    /// gets its twin.
    public static func start(
        matrix: DeviceMatrix, devices: [Device], variables: [String: String], stateDirectory: URL,
        logger: Logger, context: HADeployContext, wifiOnly: Bool = false
    ) async throws -> VirtualTwinsRun {
        let files = context.fileSystem
        // SSH devices (the iPad 2) get a jailbroken twin reached over SSH, as the real device is — never
        // a USB twin in its place, which would show a path the real deploy does not take.
        var processes: [String: JailbreakTwinProcess] = [:]
        var unavailable: [String: String] = [:]
        // A twin this host should run and did not (its script refused, it failed to start): those
        // devices fail with the reason; only a script that is not installed is "not available".
        var failed: [String: String] = [:]
        let sshDevices = devices.filter { Backends.twin(for: $0) == .jailbroken }
        if !sshDevices.isEmpty {
            switch jailbreakScript(context: context) {
            case .missing(let reason):
                for device in sshDevices { unavailable[device.id] = reason }
            case .refused(let reason):
                for device in sshDevices { failed[device.id] = reason }
            case .found(let script):
                for device in sshDevices {
                    // The id names the twin's folder (kept between runs, as the device keeps its apps): one
                    // plain component, whatever it is.
                    let directory = stateDirectory.appendingPathComponent("jailbreak")
                        .appendingPathComponent(PathNames.component(device.id))
                    do {
                        processes[device.id] = try await JailbreakTwinProcess.start(
                            script: script, directory: directory, runner: context.runner, fileSystem: files)
                    } catch {
                        logger.warning("the jailbroken twin of \(device.id) did not start: \(error)")
                        failed[device.id] = twinFailure(
                            error, log: directory.appendingPathComponent("twin.log"), context: context)
                    }
                }
            }
        }
        let virtual = VirtualMatrix(
            matrix: matrix, devices: devices.filter { Backends.twin(for: $0) != .jailbroken },
            variables: variables)
        let usbmuxd: VirtualUsbmuxd
        let address: String
        do {
            (usbmuxd, address) = try await virtual.start(
                stateDirectory: stateDirectory.appendingPathComponent("devices"), logger: logger,
                fileSystem: files, wifiOnly: wifiOnly)
        } catch {
            for process in processes.values { process.stop() }
            throw error
        }
        let infos = await usbmuxd.devices()
        var udids: [String: String] = [:]
        for info in infos { udids[info.name] = info.udid }
        for (device, reason) in virtual.skipped { unavailable[device.id] = reason }
        let images: URL
        do {
            images = try developerImages(
                versions: infos.map(\.productVersion),
                in: stateDirectory.appendingPathComponent("DeviceSupport"), fileSystem: files)
        } catch {
            await usbmuxd.stop()
            for process in processes.values { process.stop() }
            throw error
        }
        var twins = VirtualTwins(
            address: address, udids: udids, unavailable: unavailable,
            jailbroken: processes.mapValues(\.endpoint))
        twins.failed = failed
        return VirtualTwinsRun(
            twins: twins,
            developerImages: images, usbmuxd: usbmuxd, jailbroken: Array(processes.values))
    }

    public func stop() async {
        await usbmuxd.stop()
        for process in jailbroken { process.stop() }
    }

    enum JailbreakScript {
        case found(String)
        case missing(reason: String)
        /// There, but refused for a reason of this host's (a folder others can write).
        case refused(reason: String)
    }

    /// The jailbroken twin's script, or why this host cannot run a twin. Any user may run one: as root
    /// in the host's namespaces, otherwise in a user namespace (twin.sh says why when the host has none).
    static func jailbreakScript(context: HADeployContext) -> JailbreakScript {
        let found = JailbreakTwinProcess.script(
            environment: context.environment, executablePath: context.system.executablePath,
            projectDirectory: context.currentDirectory, userID: context.system.effectiveUserID,
            fileSystem: context.fileSystem)
        switch found {
        case .success(let script): return .found(script)
        case .failure(.missing):
            return .missing(
                reason:
                    "the jailbroken twin's scripts are not here (share/hadeploy/jailbreak-twin next to an "
                    + "installed hadeploy, or scripts/jailbreak-twin in a checkout): install hadeploy with "
                    + "make install, run from a hadeploy checkout, or set HADEPLOY_JAILBREAK_TWIN")
        case .failure(.untrusted(let script, let problem)):
            return .refused(
                reason:
                    "refusing to run the jailbroken twin's script \(script): \(problem); only its owner "
                    + "(this user or root) may be able to change it and the folders above it")
        }
    }

    /// One line for the table: what the twin said last, the fix, and where its whole log is.
    static func twinFailure(_ error: any Error, log: URL, context: HADeployContext) -> String {
        let logText = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        let errorText = (error as? TransportUnavailable)?.reason ?? "\(error)"
        func finalLine(_ text: String) -> String? {
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.last { !$0.isEmpty }
        }
        let lastLine = finalLine(logText) ?? finalLine(errorText) ?? "\(error)"
        let detail = logText + "\n" + errorText
        let said = lastLine.count > 160 ? String(lastLine.prefix(157)) + "..." : lastLine
        let seen = detail.lowercased()
        let missing = seen.contains("no such file") || seen.contains("not found") || seen.contains("missing")
        let fix: String
        if missing && seen.contains("sshd") {
            fix = "install the OpenSSH server (apt-get install openssh-server; make peers-demo does)"
        } else if missing && seen.contains("ssh-keygen") {
            fix = "install the OpenSSH client (apt-get install openssh-client; make peers-demo does)"
        } else if missing && seen.contains("python3") {
            fix = "install python3 (apt-get install python3; make peers-demo does)"
        } else if seen.contains("user namespace") {
            fix =
                "allow unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1; on Ubuntu "
                + "24.04 sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; user.max_user_namespaces "
                + "above 0) or run hadeploy as root"
        } else if seen.contains("belongs to another user") {
            fix = "remove the twin's folder named in the log (a run as root left it) or run as root"
        } else if missing && (seen.contains("unshare") || seen.contains("setpriv")) {
            fix = "install util-linux (apt-get install util-linux; make peers-demo does)"
        } else {
            fix = "make peers-demo installs what the twin needs"
        }
        let logNote =
            context.fileSystem.fileExists(atPath: log.path)
            ? "; log: \(relative(log.path, to: context.currentDirectory))" : ""
        return "the jailbroken twin did not start (\(said)): \(fix)\(logNote)"
    }

    /// `path` from the current directory when it is below it (shorter in the table).
    static func relative(_ path: String, to directory: URL) -> String {
        let here = directory.path + "/"
        return path.hasPrefix(here) ? String(path.dropFirst(here.count)) : path
    }

    /// Virtual devices mount any image; the files only need to exist where a real one would be.
    static func developerImages(versions: [String], in directory: URL, fileSystem: any FileSystem) throws
        -> URL
    {
        for version in Set(versions) {
            let parts = version.split(separator: ".")
            let key = parts.prefix(2).joined(separator: ".") + (parts.count == 1 ? ".0" : "")
            let folder = directory.appendingPathComponent(key)
            try fileSystem.createDirectory(at: folder, withIntermediateDirectories: true)
            let image = folder.appendingPathComponent("DeveloperDiskImage.dmg")
            if !fileSystem.fileExists(atPath: image.path) {
                try fileSystem.write(
                    Data("hadeploy virtual developer disk image for iOS \(key)\n".utf8), to: image)
                try fileSystem.write(
                    Data(repeating: 0x5A, count: 128), to: image.appendingPathExtension("signature"))
            }
        }
        return directory
    }
}
