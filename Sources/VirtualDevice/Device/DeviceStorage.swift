import Foundation

/// The emulated flash: a 64 GB device whose free space shrinks with what was put on it (media,
/// apps, crash reports), so AFC's device info and lockdown's disk_usage domain tell the same story.
struct DeviceStorage {
    let totalDiskCapacity = 64_000_000_000
    let systemCapacity = 8_000_000_000
    /// What a freshly set-up device has free on its data partition.
    static let freshDataAvailable = 41_000_000_000

    let used: Int

    init(paths: DevicePaths) {
        used = [paths.media, paths.applications, paths.crashReports].reduce(0) { $0 + Self.size(of: $1) }
    }

    var dataCapacity: Int { totalDiskCapacity - systemCapacity }
    /// What the control socket set (`setHealth`), in place of what the files leave free.
    var available: Int?

    var dataAvailable: Int { available ?? max(0, Self.freshDataAvailable - used) }

    private static func size(of directory: URL) -> Int {
        guard
            let walker = FileManager.default.enumerator(
                at: directory, includingPropertiesForKeys: [.fileSizeKey, .isRegularFileKey])
        else { return 0 }
        var total = 0
        for case let url as URL in walker {
            let values = try? url.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey])
            if values?.isRegularFile == true { total += values?.fileSize ?? 0 }
        }
        return total
    }
}
