import Foundation
import HADeployCore

/// The app's keychain items (server URL, token, webhook id). A real keychain lives outside the
/// data container, so this one does too: a plist beside it that a container read never returns.
struct AppKeychain {
    let file: URL
    private let fileSystem: any FileSystem
    private var items: [String: String]

    init(file: URL, fileSystem: any FileSystem) {
        self.file = file
        self.fileSystem = fileSystem
        if let data = fileSystem.contents(atPath: file.path),
            let dictionary = try? PropertyListSerialization.propertyList(from: data, format: nil)
                as? [String: String]
        {
            items = dictionary
        } else {
            items = [:]
        }
    }

    subscript(key: String) -> String? {
        get { items[key] }
        set { items[key] = newValue }
    }

    func save() throws {
        try fileSystem.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let data = try PropertyListValue.encode(items, .binary)
        try fileSystem.write(data, to: file, options: .atomic)
        try? fileSystem.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
    }
}
