import Foundation
import HADeployCore

/// Where a driver's tools leave files for it to read back (a screenshot, a JSON result, pulled crash
/// logs), through the context's file system: each gets a fresh name and is removed once read.
struct ScratchFolder: Sendable {
    var fileSystem: any FileSystem
    var directory: URL

    /// A fresh path in the folder, `<prefix>-<UUID><suffix>`; the folder is made, the path is not.
    func newPath(_ prefix: String, suffix: String = "") throws -> URL {
        try fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("\(prefix)-\(UUID().uuidString)\(suffix)")
    }

    /// A fresh folder in the folder, made with `attributes`.
    func newFolder(_ prefix: String, attributes: [FileAttributeKey: Any]? = nil) throws -> URL {
        let folder = directory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try fileSystem.createDirectory(at: folder, withIntermediateDirectories: true, attributes: attributes)
        return folder
    }

    /// Removes what `newPath` or `newFolder` named; a tool that wrote nothing is not an error.
    func remove(_ url: URL) { try? fileSystem.removeItem(at: url) }

    /// Runs the command `screenshot` makes for a fresh `.png` path and reads the PNG it wrote there
    /// (removed whatever happens). The path is in a fresh owner-only folder: the tool's command line
    /// shows it to every user of the machine, and in a shared folder one of them could put a link
    /// there first that the tool would write the screenshot through.
    func screenshot(
        _ invoker: ToolInvoker, timeout: Duration, missing: (reason: String, fix: String)? = nil,
        _ screenshot: @Sendable (_ path: String) -> ProcessCommand
    ) async throws -> Data {
        let folder = try newFolder("hadeploy-screenshot", attributes: [.posixPermissions: 0o700])
        defer { remove(folder) }
        let file = folder.appendingPathComponent("screenshot.png")
        _ = try await invoker.checked(
            screenshot(file.path), step: "screenshot", timeout: timeout, missing: missing)
        return try ScreenshotFile.read(file, in: fileSystem, step: "screenshot", device: invoker.device)
    }
}
