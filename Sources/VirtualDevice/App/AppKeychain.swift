import Foundation
import HADeployCore

/// The app's keychain items (server URL, token, webhook id). A real keychain lives outside the
/// data container, so this one does too: a plist beside it that a container read never returns.
struct AppKeychain {
    let file: URL
    private var items: [String: String]

    init(file: URL) {
        self.file = file
        if let data = try? Data(contentsOf: file),
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
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let data = try PropertyListValue.encode(items, .binary)
        try data.write(to: file, options: .atomic)
        try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
    }
}
