import Foundation
import TestSupport
import Testing

/// Configuration a probe found hadeploy mishandling: huge numbers, expansion bombs, paths that are no
/// files, credentials in URLs. Each must end as a configuration error (exit 78) that names the file,
/// and the line when the content is at fault, promptly and without a crash.
@Suite struct HostileInputTests {
    func replacing(_ project: Project, _ old: String, with new: String) throws {
        let text = try project.read("devices.yaml")
        #expect(text.contains(old))
        try project.write(text.replacingOccurrences(of: old, with: new), to: "devices.yaml")
    }

    func lineNumber(of text: String, in project: Project) throws -> Int {
        let lines = try project.read("devices.yaml").split(separator: "\n", omittingEmptySubsequences: false)
        return try #require(lines.firstIndex { $0.contains(text) }) + 1
    }

    @Test(arguments: ["1e300", "1e16", "inf", "604801"])
    func hugeTimeoutsAreConfigurationErrorsAtTheirLine(value: String) async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        try replacing(
            project, "  verification_timeout: 30 ",
            with: "  timeouts: {install: \(value)}\n  verification_timeout: \(value) ")
        let line = try lineNumber(of: "verification_timeout: \(value)", in: project)
        let installLine = try lineNumber(of: "timeouts: {install: \(value)}", in: project)
        for arguments in [["plan", "all"], ["all", "--no-build", "--virtual"]] {
            let result = try await HADeployBinary.run(arguments, in: project.url, timeout: .seconds(60))
            #expect(result.status == 78, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("devices.yaml:\(line):"), "\(result.stderr)")
            #expect(result.stderr.contains("devices.yaml:\(installLine):"), "\(result.stderr)")
            #expect(result.stderr.contains("verification_timeout must be"))
        }
    }

    /// Before: `--artifact ''` searched the current folder for builds, and `status --timeout 0.5` ran
    /// though the help says 1 to 600.
    @Test func anEmptyArtifactPathAndASubSecondStatusTimeoutAreUsageErrors() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        for arguments in [
            ["mini4", "--no-build", "--artifact", ""], ["mini4", "--no-build", "--artifacts", ""],
            ["status", "mini4", "--timeout", "0.5"], ["status", "mini4", "--artifact", ""],
        ] {
            let result = try await HADeployBinary.run(arguments, in: project.url, timeout: .seconds(60))
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            let said =
                result.stderr.contains("needs a path") || result.stderr.contains("needs a folder")
                || result.stderr.contains("from 1 to 600")
            #expect(said, "\(arguments): \(result.stderr)")
        }
    }

    /// Before: a long --state gave NIO's raw `unixDomainSocketPathTooLong`.
    @Test func aStateFolderTooLongForASocketSaysSo() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let long = ".hadeploy/" + String(repeating: "s", count: 120)
        let result = try await HADeployBinary.run(
            ["mini4", "--virtual", "--no-build", "--state", long], in: project.url, timeout: .seconds(120))
        #expect(result.status != 0)
        #expect(result.stderr.contains("is too long for the twins' sockets"), "\(result.stderr)")
        #expect(result.stderr.contains("give a shorter --state"), "\(result.stderr)")
        #expect(!result.stderr.contains("unixDomainSocketPathTooLong"), "\(result.stderr)")
    }

    @Test func anExpansionBombStopsAtItsLine() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        var lines = ["B0=0123456789abcdef"]
        for index in 1...40 { lines.append("B\(index)=${B\(index - 1)}${B\(index - 1)}") }
        try project.write(lines.joined(separator: "\n") + "\n", to: ".env")
        let started = ContinuousClock.now
        let result = try await project.run("plan", "all")
        #expect(result.status == 78, "\(result.stderr)")
        // 16 bytes doubled 17 times is 2 MiB, past the 1 MiB cap: the line of B17.
        #expect(result.stderr.contains(".env:18: error: B17 expands to more than 1 MiB"), "\(result.stderr)")
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func invalidUTF8NamesTheLine() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        try Data("A=1\nB=2\nC=\u{e9}t\u{e9}\n".utf8.map { $0 == 0xC3 ? 0xFF : $0 }).write(
            to: project.url.appendingPathComponent(".env"))
        let result = try await project.run("plan", "all")
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains(".env:3:3: error: not UTF-8 text"), "\(result.stderr)")
        var yaml = Data(try project.read("devices.yaml").utf8)
        yaml.append(contentsOf: [0x23, 0x20, 0xC0, 0x0A])
        try yaml.write(to: project.url.appendingPathComponent("devices.yaml"))
        try FileManager.default.removeItem(at: project.url.appendingPathComponent(".env"))
        let yamlLines = try #require(String(data: yaml.dropLast(2), encoding: .utf8)).split(
            separator: "\n", omittingEmptySubsequences: false
        ).count
        let broken = try await project.run("plan", "all")
        #expect(broken.status == 78)
        #expect(
            broken.stderr.contains("devices.yaml:\(yamlLines):3: error: not UTF-8 text"), "\(broken.stderr)")
    }

    @Test func pathsThatAreNoFilesAreConfigurationErrors() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let fifo = project.url.appendingPathComponent("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        try FileManager.default.createDirectory(
            at: project.url.appendingPathComponent("folder"), withIntermediateDirectories: true)
        let cases: [(option: String, path: String, says: String)] = [
            ("--config", "folder", "folder:1:1: error: is a directory, not a regular file"),
            ("--config", fifo, "\(fifo):1:1: error: is a FIFO (named pipe), not a regular file"),
            ("--config", "/dev/zero", "/dev/zero:1:1: error: is a character device, not a regular file"),
            ("--config", "", "--config is an empty path"),
            ("--env-file", "folder", "folder: is a directory, not a regular file"),
            ("--env-file", fifo, "\(fifo): is a FIFO (named pipe), not a regular file"),
            ("--env-file", "/dev/zero", "/dev/zero: is a character device, not a regular file"),
            ("--env-file", "", "--env-file is an empty path"),
        ]
        for (option, path, says) in cases {
            let result = try await HADeployBinary.run(
                ["plan", "all", option, path], in: project.url, timeout: .seconds(20))
            #expect(result.status == 78, "\(option) \(path): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(option) \(path): \(result.stderr)")
        }
    }

    @Test func aPasswordInTheServerURLIsNeverShown() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        try project.write("HA_SERVER=http://admin:s3cretpw@ha.local:8123\nHA_TOKEN=abc\n", to: ".env")
        for arguments in [
            ["plan", "all"], ["plan", "all", "--json"], ["all", "--dry-run"], ["all", "--dry-run", "--json"],
            ["plan", "all", "--server", "http://other:pw2secret@h:1"],
        ] {
            let result = try await HADeployBinary.run(arguments, in: project.url)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            for secret in ["s3cretpw", "pw2secret"] {
                #expect(!result.stdout.contains(secret), "\(arguments) stdout")
                #expect(!result.stderr.contains(secret), "\(arguments) stderr")
            }
            #expect(result.stdout.contains("admin:***@ha.local") || result.stdout.contains("other:***@h:1"))
        }
    }

    @Test func aRefusedTokenStillWritesTheReport() async throws {
        let homeAssistant = try await HomeAssistantServer.shared()
        let project = try await Project(commits: 1, tag: "v1.0.0")
        try project.write("HA_SERVER=\(homeAssistant.url)\nHA_TOKEN=refused-token-0123456789\n", to: ".env")
        let result = try await HADeployBinary.run(
            ["all", "--virtual", "--no-build", "--report", "out"], in: project.url, timeout: .seconds(180))
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("refused"), "\(result.stderr)")
        let summary = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: project.url.appendingPathComponent("out/summary.json")))
                as? [String: Any])
        let results = try #require(summary["results"] as? [[String: Any]])
        // Every device of `all` (the committed matrix), none started.
        let plan = try await HADeployBinary.run(["plan", "all", "--json"], in: project.url)
        let planned = try #require(
            try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])
        let count = (planned["devices"] as? [[String: Any]])?.count ?? -1
        #expect(results.count == count && count > 0)
        for device in results {
            #expect(device["outcome"] as? String == "not started")
            #expect((device["reason"] as? String)?.contains("token") == true, "\(device)")
        }
        let junit = try String(
            contentsOf: project.url.appendingPathComponent("out/junit.xml"), encoding: .utf8)
        #expect(junit.contains("failures=\"\(count)\""))
        #expect(!junit.contains("refused-token-0123456789"))
    }
}
