import Foundation
import HADeployCore

/// The app's keychain items (server URL, token, webhook id). A real keychain lives outside the
/// data container, so this one does too: a plist beside it that a container read never returns.
struct AppKeychain {
    private let store: PropertyListFile
    private var items: [String: String]

    init(file: URL, fileSystem: any FileSystem) {
        store = PropertyListFile(url: file, fileSystem: fileSystem)
        items = store.read(String.self) ?? [:]
    }

    var file: URL { store.url }

    subscript(key: String) -> String? {
        get { items[key] }
        set { items[key] = newValue }
    }

    func save() throws {
        try store.write(items)
        try? store.fileSystem.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
    }
}
