import Foundation
import HADeployCore
import Testing

@testable import HADeployKit

extension ProcessCommand {
    /// The value after `option` in the argument list (`--json-output` → its path).
    func value(after option: String) -> String? {
        guard let index = arguments.firstIndex(of: option), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }
}

/// The hand-written tool outputs in Fixtures/apple (see its README), read from the source tree.
enum AppleFixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/apple")

    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    static func data(_ name: String) throws -> Data { try Data(contentsOf: url(name)) }

    static func text(_ name: String) throws -> String { String(decoding: try data(name), as: UTF8.self) }

    /// An effect writing `name` where the command's `option` points (devicectl's `--json-output`).
    static func writes(_ name: String, at option: String) -> @Sendable (ProcessCommand) throws -> Void {
        { command in
            let path = try #require(command.value(after: option))
            try data(name).write(to: URL(fileURLWithPath: path))
        }
    }

    /// An effect writing a tiny PNG to the command's last argument (a screenshot tool's output file).
    static let writesPNG: @Sendable (ProcessCommand) throws -> Void = { command in
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
        try png.write(to: URL(fileURLWithPath: try #require(command.arguments.last)))
    }
}

/// A temporary directory removed when the test ends.
final class TemporaryFolder: @unchecked Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-apple-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> URL { url.appendingPathComponent(name) }
}
