import Foundation
import HADeployCore
import TestSupport
import Testing

@Suite struct LiveProcessRunnerTests {
    let runner = TestHost.runner

    @Test func collectsStatusAndBothStreams() async throws {
        let output = try await runner.run(
            ProcessCommand("/bin/sh", ["-c", "printf 'out\\n'; printf 'err\\n' >&2; exit 7"]),
            timeout: .seconds(30))
        #expect(output.status == 7)
        #expect(output.stdout == "out\n")
        #expect(output.stderr == "err\n")
    }

    @Test func largeOutputIsNotLostOrReordered() async throws {
        // Bigger than a pipe buffer (64 KiB), so the child blocks unless the runner drains while waiting.
        let output = try await runner.run(
            ProcessCommand("/bin/sh", ["-c", "seq 1 200000"]), timeout: .seconds(60))
        let expected = (1...200_000).map(String.init).joined(separator: "\n") + "\n"
        #expect(output.status == 0)
        #expect(output.stdout.count == expected.count)
        #expect(output.stdout == expected)
    }

    @Test func findsExecutablesOnPathAndAddsEnvironmentAndDirectory() async throws {
        let directory = try temporaryDirectory("runner")
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = try await runner.checked(
            ProcessCommand(
                "sh", ["-c", "pwd; printf '%s\\n' \"$HADEPLOY_TEST_VALUE\""],
                environment: ["HADEPLOY_TEST_VALUE": "a b"], workingDirectory: directory.path),
            timeout: .seconds(30))
        let lines = output.stdout.split(separator: "\n").map(String.init)
        #expect(
            URL(fileURLWithPath: lines[0]).resolvingSymlinksInPath().path
                == directory.resolvingSymlinksInPath().path)
        #expect(lines[1] == "a b")
    }

    /// An executable script that prints `word`, with a descriptor still open for writing it.
    static func scriptOpenForWriting(_ name: String, printing word: String) throws -> (URL, FileHandle) {
        let script = try temporaryDirectory(name).appendingPathComponent("tool")
        _ = FileManager.default.createFile(
            atPath: script.path, contents: Data("#!/bin/sh\necho \(word)\n".utf8),
            attributes: [.posixPermissions: 0o755])
        return (script, try FileHandle(forWritingTo: script))
    }

    /// A script still open for writing somewhere (a child forked while a test wrote it inherits the
    /// descriptor) cannot be executed ("text file busy"): the runner waits briefly instead of failing.
    @Test func aScriptStillOpenForWritingRunsOnceItIsClosed() async throws {
        let (script, writer) = try Self.scriptOpenForWriting("busy", printing: "ready")
        let closer = Task {
            try await Task.sleep(for: .milliseconds(120))
            try writer.close()
        }
        let output = try await TestHost.runner.run(ProcessCommand(script.path), timeout: .seconds(20))
        try await closer.value
        #expect(output.status == 0 && output.stdout == "ready\n", "\(output)")
    }

    @Test func aScriptThatStaysOpenForWritingIsNamedWithTheSystemsReason() async throws {
        let (script, writer) = try Self.scriptOpenForWriting("busy-forever", printing: "never")
        defer { try? writer.close() }
        await #expect {
            _ = try await TestHost.runner.run(ProcessCommand(script.path), timeout: .seconds(20))
        } throws: { error in
            "\(error)".contains("could not start") && "\(error)".contains("busy")
        }
    }

    @Test func aMissingExecutableIsNamed() async throws {
        let error = await #expect(throws: ProcessError.self) {
            _ = try await runner.run(ProcessCommand("hadeploy-no-such-tool"), timeout: .seconds(5))
        }
        #expect(error?.description.contains("hadeploy-no-such-tool: command not found") == true)
    }

    @Test func checkedThrowsOnNonZeroExitWithStatusAndStderr() async throws {
        let error = await #expect(throws: ProcessError.self) {
            _ = try await runner.checked(
                ProcessCommand("/bin/sh", ["-c", "echo nope >&2; exit 4"]), timeout: .seconds(30))
        }
        #expect(error?.description == "`/bin/sh -c 'echo nope >&2; exit 4'` exited with status 4: nope")
    }

    @Test func aProcessPastItsDeadlineIsKilled() async throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-pid-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: marker) }
        let started = ContinuousClock.now
        let error = await #expect(throws: ProcessError.self) {
            // exec: the pid written is the sleeping process itself.
            _ = try await runner.run(
                ProcessCommand("/bin/sh", ["-c", "echo $$ > '\(marker.path)'; exec sleep 60"]),
                timeout: .seconds(1))
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(20))
        #expect(error?.description.contains("did not finish within 1 s") == true)
        let pid = try #require(
            Int32(String(contentsOf: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        )
        // Gone (reaped), not merely signalled.
        var alive = true
        for _ in 0..<50 where alive {
            alive = kill(pid, 0) == 0
            if alive { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(!alive)
    }

    @Test func aProcessIgnoringSIGTERMIsKilledToo() async throws {
        let started = ContinuousClock.now
        await #expect(throws: ProcessError.self) {
            _ = try await runner.run(
                ProcessCommand("/bin/sh", ["-c", "trap '' TERM; while :; do sleep 0.1; done"]),
                timeout: .seconds(1))
        }
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    /// A child gets stdin, stdout and stderr and nothing else of hadeploy's: not a file it has open
    /// (a pair record, a key) without close-on-exec.
    @Test func aChildGetsNoDescriptorOfHadeploysBeyondTheStandardThree() async throws {
        let directory = try temporaryDirectory("runner-fds")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("secret")
        try Data("the secret\n".utf8).write(to: file)
        let fd = open(file.path, O_RDONLY)  // no O_CLOEXEC: a child would keep it, but for the spawn
        try #require(fd > 2)
        defer { close(fd) }
        let output = try await runner.run(
            ProcessCommand("/bin/cat", ["/dev/fd/\(fd)"]), timeout: .seconds(30))
        #expect(output.status != 0)
        #expect(!output.stdout.contains("secret"))
        // The same descriptor, read in this process, still holds the file: it was there to leak.
        var byte: UInt8 = 0
        #expect(read(fd, &byte, 1) == 1)
    }

    /// hadeploy ignores SIGPIPE for itself; its children get the default back, so a pipeline in a
    /// build script ends as in a terminal instead of printing "Broken pipe".
    @Test func aChildGetsTheDefaultSignalsBack() async throws {
        signal(SIGPIPE, SIG_IGN)
        let output = try await runner.run(
            ProcessCommand("/bin/sh", ["-c", "yes | head -n 1"]), timeout: .seconds(30))
        #expect(output.status == 0)
        #expect(output.stdout == "y\n")
        #expect(output.stderr == "", "\(output.stderr)")
    }
}
