import Foundation
import HADeployCore

/// A file inside an app container that is a local directory (simulators): nil when absent; a
/// relative path never leaves the container.
enum AppContainerFile {
    static func read(container: String, relativePath: String, in fileSystem: any FileSystem) -> Data? {
        let parts = relativePath.split(separator: "/")
        guard !parts.isEmpty, !parts.contains(where: { $0 == ".." || $0 == "." }) else { return nil }
        let url = parts.reduce(URL(fileURLWithPath: container)) { $0.appendingPathComponent(String($1)) }
        return fileSystem.contents(atPath: url.path)
    }
}
