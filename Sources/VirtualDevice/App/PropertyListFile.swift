import Foundation
import HADeployCore

/// A dictionary the app keeps in one property-list file on the device (its preferences domain, its
/// keychain items), read and written through the device's file system.
struct PropertyListFile {
    let url: URL
    let fileSystem: any FileSystem

    /// What the file holds, or nil when it is missing or is not a dictionary of `Value`s.
    func read<Value>(_: Value.Type) -> [String: Value]? {
        guard let data = fileSystem.contents(atPath: url.path) else { return nil }
        return (try? PropertyListSerialization.propertyList(from: data, format: nil)) as? [String: Value]
    }

    /// Replaces the file (binary, through a temporary file), making its folder first.
    func write(_ dictionary: [String: Any]) throws {
        try fileSystem.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try fileSystem.write(try PropertyListValue.encode(dictionary, .binary), to: url, options: .atomic)
    }
}
