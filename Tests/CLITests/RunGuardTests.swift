import ArgumentParser
import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployCLI

/// Issue 25, as a user meets it: a hostile Home Assistant's words on the terminal and in CI logs,
/// limits that answer at once (--jobs, YAML alias bombs, server URLs), a report folder found unusable
/// before any device, and one run per state folder.
@Suite struct RunGuardTests {
    /// Lines that a GitHub runner would take for workflow commands (it trims leading whitespace).
    static func workflowCommands(_ text: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter {
            let trimmed = $0.drop { $0 == " " || $0 == "\t" }
            return trimmed.hasPrefix("::") || trimmed.hasPrefix("##[")
        }
    }

    /// Before: ESC sequences reached the terminal raw and `::error …` lines of the server's message
    /// became real annotations under GITHUB_ACTIONS.
    @Test func aHostileHomeAssistantsWordsArePrintedNeutralised() async throws {
        let server = try await HostileHomeAssistant.start(.error)
        defer { server.stop() }
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let environment = ["HA_TOKEN": "hostile-test-token", "GITHUB_ACTIONS": "true"]
        for arguments in [
            ["verify", "--server", server.url], ["all", "--no-build", "--virtual", "--server", server.url],
        ] {
            let result = try await HADeployBinary.run(
                arguments, in: project.url, environment: environment, timeout: .seconds(120))
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            let printed = result.stdout + result.stderr
            #expect(printed.contains("\\u001B[31mred alert"), "\(arguments): \(printed)")
            #expect(!printed.contains("\u{1B}") && !printed.contains("\r") && !printed.contains("\u{07}"))
            // The only workflow command is hadeploy's own annotation of the failure (deploy).
            let commands = Self.workflowCommands(printed)
            #expect(commands.allSatisfy { $0.hasPrefix("::error title=hadeploy::") }, "\(commands)")
            #expect(printed.contains("\\::error file=devices.yaml,line=1::injected annotation"))
            #expect(printed.contains("\\::add-mask::secret"))
        }
    }

    /// Before: `--jobs 99999999999` spun at 100 % CPU and ignored the first Ctrl-C.
    @Test func anImpossibleJobsCountIsAUsageErrorAtOnce() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        for jobs in ["99999999999", "0", "257"] {
            let result = try await project.run("all", "--no-build", "--virtual", "--jobs", jobs)
            #expect(result.status == 64, "\(jobs): \(result.stderr)")
            #expect(result.stderr.contains("--jobs \(jobs) is out of range"), "\(result.stderr)")
            #expect(result.stderr.contains("from 1 to 256"))
        }
    }

    /// Before: an alias bomb used as a mapping key took 13 s at depth 7 (minutes at 9) in every
    /// command that reads devices.yaml.
    @Test func aYAMLAliasBombStopsAtItsLine() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let committed = try project.read("devices.yaml")
        let base = committed.split(separator: "\n", omittingEmptySubsequences: false).count
        // Nine of each level, seven levels: 9^7 = 4.8 million nodes, used as a key.
        var bomb = ["laugh0: &l0 [ha, ha, ha, ha, ha, ha, ha, ha, ha]"]
        for level in 1...7 {
            let previous = Array(repeating: "*l\(level - 1)", count: 9).joined(separator: ", ")
            bomb.append("laugh\(level): &l\(level) [\(previous)]")
        }
        bomb.append("? *l7\n: boom")
        try project.write(committed + "\n" + bomb.joined(separator: "\n") + "\n", to: "devices.yaml")
        let expanded = try await project.run("plan", "all")
        #expect(expanded.status == 78, "\(expanded.stderr)")
        #expect(expanded.stderr.contains("the aliases expand this file to more than 100000 values"))
        #expect(expanded.stderr.contains("devices.yaml:\(base + 6):"), "\(expanded.stderr)")

        // A small alias as a key: refused too, at the alias.
        try project.write(committed + "\nshared: &k [a, b]\nextra:\n  *k : value\n", to: "devices.yaml")
        let keyed = try await project.run("plan", "all")
        #expect(keyed.status == 78, "\(keyed.stderr)")
        #expect(
            keyed.stderr.contains("devices.yaml:\(base + 3):3: error: the alias *k is used as a mapping key"),
            "\(keyed.stderr)")
    }

    /// Before: a CR/LF in HA_SERVER, or port 0 or 99999, was accepted and sent to the app.
    @Test func aServerURLWithALineBreakOrAnImpossiblePortIsRefused() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let token = ["HA_TOKEN": "some-token"]
        let fromEnvironment = try await project.run(
            "plan", "all",
            environment: token.merging(["HA_SERVER": "http://127.0.0.1:8123/\r\nX-Evil: 1"]) { $1 })
        #expect(fromEnvironment.status == 78, "\(fromEnvironment.stderr)")
        #expect(fromEnvironment.stderr.contains("HA_SERVER"))
        #expect(fromEnvironment.stderr.contains("carriage return"), "\(fromEnvironment.stderr)")
        for port in ["0", "99999"] {
            let result = try await project.run(
                "plan", "all", "--server", "http://127.0.0.1:\(port)", environment: token)
            #expect(result.status == 64, "\(result.stderr)")
            #expect(result.stderr.contains("has port \(port), which is not a TCP port"), "\(result.stderr)")
        }
    }

    /// Before: an unusable --report was found after every device was deployed, the last line named a
    /// report that did not exist, and a full disk exited 0.
    @Test func anUnusableReportFolderIsFoundBeforeAnyDevice() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        try project.write("not a folder", to: "taken")
        let full = project.url.appendingPathComponent("full")
        try FileManager.default.createDirectory(at: full, withIntermediateDirectories: true)
        // A 64 KiB tmpfs, filled: a full disk.
        _ = try await TestHost.runner.checked(
            ProcessCommand("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", full.path]),
            timeout: .seconds(30))
        defer {
            _ = try? Process.run(URL(fileURLWithPath: "/bin/umount"), arguments: [full.path]).waitUntilExit()
        }
        _ = try? Data(repeating: 1, count: 1 << 20).write(to: full.appendingPathComponent("filler"))
        for (folder, says) in [
            ("taken", "it is a file, not a folder"), ("taken/inside", "taken is a file, not a folder"),
            ("full/report", "no space left on device"),
        ] {
            let result = try await project.run(
                "all", "--no-build", "--virtual", "--no-verify", "--report", folder)
            #expect(result.status == 1, "\(folder): \(result.stderr)")
            #expect(result.stderr.contains("cannot write the report to \(folder)"), "\(result.stderr)")
            #expect(result.stderr.contains(says), "\(folder): \(result.stderr)")
            #expect(result.stderr.contains("Nothing was deployed"))
            #expect(
                !result.stderr.split(separator: "\n").contains { $0.hasPrefix("report: ") },
                "no report is named")
            // Not even the twins were started.
            #expect(
                !FileManager.default.fileExists(atPath: project.url.appendingPathComponent(".hadeploy").path))
        }
    }

    /// Before: two `--virtual` runs in one checkout shared the state folder and wrecked each other.
    @Test func aSecondVirtualRunOnTheSameStateFolderRefusesClearly() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let first = Process()
        first.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        first.arguments =
            ["-i"] + HADeployBinary.baseEnvironment(home: project.url).map { "\($0.key)=\($0.value)" }
            + [try await HADeployBinary.path, "virtual", "--only", "mini4"]
        first.currentDirectoryURL = project.url
        let output = Pipe()
        first.standardOutput = output
        first.standardError = FileHandle.nullDevice
        try first.run()
        defer {
            kill(first.processIdentifier, SIGKILL)
            first.waitUntilExit()
        }
        var started = ""
        let handle = output.fileHandleForReading
        while !started.contains("USBMUXD_SOCKET_ADDRESS=") {
            let data = handle.availableData
            if data.isEmpty { break }
            started += String(decoding: data, as: UTF8.self)
        }
        #expect(started.contains("USBMUXD_SOCKET_ADDRESS="), "hadeploy virtual did not start")
        for arguments in [["all", "--no-build", "--virtual", "--no-verify"], ["plan", "all", "--virtual"]] {
            let second = try await HADeployBinary.run(arguments, in: project.url, timeout: .seconds(60))
            #expect(second.status == 1, "\(second.stderr)")
            #expect(
                second.stderr.contains(
                    "another hadeploy run (pid \(first.processIdentifier)) is using .hadeploy/virtual: wait for it "
                        + "to finish or stop it"), "\(second.stderr)")
        }
        // The lock goes with its holder, however it ends.
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        let after = try await HADeployBinary.run(
            ["plan", "all", "--virtual"], in: project.url, timeout: .seconds(60))
        #expect(after.status == 0, "\(after.stderr)")
    }
}
