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

/// A new folder of a short name under /tmp (`/tmp/hd-XXXXXX`), for UNIX socket paths: a socket
/// address holds at most 104 bytes (108 on Linux), and macOS's `$TMPDIR` alone takes 49 of them.
public func shortTemporaryDirectory() throws -> URL {
    var template = Array("/tmp/hd-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
    return URL(fileURLWithPath: String(cString: made))
}
