import DeviceSpec
import Foundation
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

    /// Starts a twin for each of `devices` that a virtual device can stand for.
    public static func start(
        matrix: DeviceMatrix, devices: [Device], variables: [String: String], stateDirectory: URL,
        logger: Logger
    ) async throws -> VirtualTwinsRun {
        let virtual = VirtualMatrix(matrix: matrix, devices: devices, variables: variables)
        let (usbmuxd, address) = try await virtual.start(
            stateDirectory: stateDirectory.appendingPathComponent("devices"), logger: logger)
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
            throw error
        }
        return VirtualTwinsRun(
            twins: VirtualTwins(address: address, udids: udids, unavailable: unavailable),
            developerImages: images, usbmuxd: usbmuxd)
    }

    public func stop() async { await usbmuxd.stop() }

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
