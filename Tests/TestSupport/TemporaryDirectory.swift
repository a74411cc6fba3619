import Foundation

/// A fresh, empty directory under the system's temporary directory, named
/// `hadeploy-<label>-<UUID>`. The test removes it (or leaves it for inspection).
public func temporaryDirectory(_ label: String = "test") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
        "hadeploy-\(label)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The checkout this test build came from (scripts, venvs, the committed devices.yaml).
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
