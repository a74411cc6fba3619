import Foundation

/// A Developer Disk Image as Xcode keeps one: `<folder>/DeveloperDiskImage.dmg` and its `.signature`.
/// The twins mount any image; a test that measures the mount's upload picks the size.
public enum DeveloperDiskImageFixture {
    public static func write(
        in folder: URL, image: Data = Data("virtual ddi".utf8),
        signature: Data = Data(repeating: 1, count: 64)
    ) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try image.write(to: folder.appendingPathComponent("DeveloperDiskImage.dmg"))
        try signature.write(to: folder.appendingPathComponent("DeveloperDiskImage.dmg.signature"))
    }
}
