import Crypto
import Foundation

/// A digest of an `.app` directory: every file's relative path and contents, in path order. Two
/// bundles with the same digest are the same build; used to skip a simulator install that would
/// change nothing (a reinstall restarts the app and loses its state for no reason).
enum BundleTreeHash {
    static func digest(of bundle: URL) -> String? {
        let root = bundle.standardizedFileURL.path
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return nil }
        var files: [String] = []
        while let relative = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + relative, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                files.append(relative)
            }
        }
        guard !files.isEmpty else { return nil }
        var hash = SHA256()
        for relative in files.sorted() {
            guard
                let data = try? Data(
                    contentsOf: URL(fileURLWithPath: root + "/" + relative), options: .mappedIfSafe)
            else { return nil }
            hash.update(data: Data(relative.utf8))
            hash.update(data: Data([0]))
            hash.update(data: data)
        }
        return hash.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
