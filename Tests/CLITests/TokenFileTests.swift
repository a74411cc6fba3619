import Foundation
import TestSupport
import Testing

/// The token never on a command line (every local user reads `ps`): `--token` is refused with the
/// way on, `--token-file` reads it from a file only its owner can read.
@Suite struct TokenFileTests {
    @Test func aTokenOnTheCommandLineIsRefusedAndAFileOthersCanReadToo() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let onCommandLine = try await project.run("plan", "mini4", "--token", "command-line-token-123")
        #expect(onCommandLine.status == 64, "\(onCommandLine.stderr)")
        #expect(onCommandLine.stderr.contains("--token is refused"), "\(onCommandLine.stderr)")
        #expect(onCommandLine.stderr.contains("--token-file"), "\(onCommandLine.stderr)")
        #expect(!onCommandLine.stderr.contains("command-line-token-123"))

        let file = project.url.appendingPathComponent("token")
        try Data("file-token-456\n".utf8).write(to: file)
        #expect(chmod(file.path, 0o644) == 0)
        let readable = try await project.run("plan", "mini4", "--token-file", file.path)
        #expect(readable.status == 64, "\(readable.stderr)")
        #expect(readable.stderr.contains("chmod 600 it"), "\(readable.stderr)")
        #expect(!readable.stderr.contains("file-token-456"))

        #expect(chmod(file.path, 0o600) == 0)
        let planned = try await project.run("plan", "mini4", "--token-file", file.path, "--json")
        #expect(planned.status == 0, "\(planned.stderr)")
        #expect(planned.stdout.contains("env:HA_TOKEN"), "the plan names the token by reference")
        #expect(!planned.stdout.contains("file-token-456") && !planned.stderr.contains("file-token-456"))
    }
}
