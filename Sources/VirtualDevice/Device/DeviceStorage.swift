import Foundation
import HADeployCore

/// The emulated flash: a 64 GB device whose free space shrinks with what was put on it (media,
/// apps, crash reports), so AFC's device info and lockdown's disk_usage domain tell the same story.
struct DeviceStorage {
    let totalDiskCapacity = 64_000_000_000
    let systemCapacity = 8_000_000_000
    /// What a freshly set-up device has free on its data partition.
    static let freshDataAvailable = 41_000_000_000

    let used: Int

    init(paths: DevicePaths, fileSystem: any FileSystem) {
        used = [paths.media, paths.applications, paths.crashReports].reduce(0) {
            $0 + Int(fileSystem.allocatedSize(ofDirectory: $1))
        }
    }

    var dataCapacity: Int { totalDiskCapacity - systemCapacity }
    /// What the control socket set (`setHealth`), in place of what the files leave free.
    var available: Int?

    var dataAvailable: Int { available ?? max(0, Self.freshDataAvailable - used) }
}
