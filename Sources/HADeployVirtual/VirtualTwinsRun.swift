import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import Logging
import VirtualDevice

/// Virtual twins started for one run (`--virtual`): the running usbmuxd, what the planner needs to
/// know about it, and the Developer Disk Images the twins accept. The CLI starts it before planning
/// and stops it after the deploy; the Kit only ever sees the `VirtualTwins` value.
public struct VirtualTwinsRun: Sendable {
    public let twins: VirtualTwins
    public let developerImages: URL
    let usbmuxd: VirtualUsbmuxd
    let jailbroken: [JailbreakTwinProcess]

    /// Starts a twin for each of `devices` that a virtual device can stand for.
    public static func start(
        matrix: DeviceMatrix, devices: [Device], variables: [String: String], stateDirectory: URL,
        logger: Logger
    ) async throws -> VirtualTwinsRun {
        // SSH devices (the iPad 2) get a jailbroken twin reached over SSH when this host can run one.
        var processes: [String: JailbreakTwinProcess] = [:]
        if let script = JailbreakTwinProcess.script(
            environment: ProcessInfo.processInfo.environment,
            projectDirectory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        {
            for device in devices where device.transport == .ssh {
                do {
                    processes[device.id] = try await JailbreakTwinProcess.start(
                        script: script,
                        directory: stateDirectory.appendingPathComponent("jailbreak/\(device.id)"),
                        runner: LiveProcessRunner())
                } catch {
                    for process in processes.values { process.stop() }
                    throw error
                }
            }
        }
        let virtual = VirtualMatrix(
            matrix: matrix, devices: devices.filter { processes[$0.id] == nil }, variables: variables)
        let usbmuxd: VirtualUsbmuxd
        let address: String
        do {
            (usbmuxd, address) = try await virtual.start(
                stateDirectory: stateDirectory.appendingPathComponent("devices"), logger: logger)
        } catch {
            for process in processes.values { process.stop() }
            throw error
        }
        let infos = await usbmuxd.devices()
        var udids: [String: String] = [:]
        for info in infos { udids[info.name] = info.udid }
        var unavailable: [String: String] = [:]
        for (device, reason) in virtual.skipped { unavailable[device.id] = reason }
        let images: URL
        do {
            images = try developerImages(
                versions: infos.map(\.productVersion),
                in: stateDirectory.appendingPathComponent("DeviceSupport"))
        } catch {
            await usbmuxd.stop()
            for process in processes.values { process.stop() }
            throw error
        }
        return VirtualTwinsRun(
            twins: VirtualTwins(
                address: address, udids: udids, unavailable: unavailable,
                jailbroken: processes.mapValues {
                    JailbrokenTwinEndpoint(port: $0.port, key: $0.keyPath, knownHosts: $0.knownHostsPath)
                }),
            developerImages: images, usbmuxd: usbmuxd, jailbroken: Array(processes.values))
    }

    public func stop() async {
        await usbmuxd.stop()
        for process in jailbroken { process.stop() }
    }

    /// Virtual devices mount any image; the files only need to exist where a real one would be.
    static func developerImages(versions: [String], in directory: URL) throws -> URL {
        for version in Set(versions) {
            let parts = version.split(separator: ".")
            let key = parts.prefix(2).joined(separator: ".") + (parts.count == 1 ? ".0" : "")
            let folder = directory.appendingPathComponent(key)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let image = folder.appendingPathComponent("DeveloperDiskImage.dmg")
            if !FileManager.default.fileExists(atPath: image.path) {
                try Data("hadeploy virtual developer disk image for iOS \(key)\n".utf8).write(to: image)
                try Data(repeating: 0x5A, count: 128).write(to: image.appendingPathExtension("signature"))
            }
        }
        return directory
    }
}
