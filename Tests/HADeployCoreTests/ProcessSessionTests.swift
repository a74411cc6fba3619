import Foundation
import HADeployCore
import TestSupport
import Testing

/// The live runner's sessions: a child kept running, lines in and out, each wait bounded, and a child
/// that ends when its stdin closes or, failing that, by signal.
@Suite struct ProcessSessionTests {
    let runner = TestHost.runner

    @Test func linesGoInAndComeOutInOrderAndTheFirstInputIsWrittenFirst() async throws {
        let session = try runner.session(
            ProcessCommand(
                "/bin/sh", ["-c", "while read -r line; do echo \"got $line\"; done"],
                standardInput: Data("first\n".utf8)))
        #expect(try await session.nextLine(timeout: .seconds(30)) == "got first")
        for word in ["a", "b b", "c"] { try session.send(Data("\(word)\n".utf8)) }
        #expect(try await session.nextLine(timeout: .seconds(30)) == "got a")
        #expect(try await session.nextLine(timeout: .seconds(30)) == "got b b")
        #expect(try await session.nextLine(timeout: .seconds(30)) == "got c")
        #expect(session.isRunning)
        // Closing stdin ends the loop: the child exits by itself and stdout ends.
        await session.stop(grace: .seconds(10))
        #expect(!session.isRunning)
        #expect(try await session.nextLine(timeout: .seconds(10)) == nil)
        #expect(throws: (any Error).self) { try session.send(Data("late\n".utf8)) }
    }

    @Test func aWaitWithoutALineEndsAtItsTimeoutAndTheSessionGoesOn() async throws {
        let session = try runner.session(
            ProcessCommand("/bin/sh", ["-c", "read -r line; echo \"$line\"; sleep 600"]))
        await #expect(throws: ProcessSessionTimeout.self) {
            _ = try await session.nextLine(timeout: .milliseconds(200))
        }
        try session.send(Data("still there\n".utf8))
        #expect(try await session.nextLine(timeout: .seconds(30)) == "still there")
        await session.stop(grace: .zero)
        #expect(!session.isRunning)
    }

    @Test func aChildThatIgnoresItsStdinAndSIGTERMIsKilled() async throws {
        let session = try runner.session(
            ProcessCommand("/bin/sh", ["-c", "trap '' TERM; echo up; while :; do sleep 1; done"]))
        #expect(try await session.nextLine(timeout: .seconds(30)) == "up")
        await session.stop(grace: .milliseconds(200))
        #expect(!session.isRunning)
    }

    @Test func stderrIsKeptForMessagesAndACancelledWaitThrows() async throws {
        let session = try runner.session(
            ProcessCommand("/bin/sh", ["-c", "echo 'something went wrong' >&2; echo ready; sleep 600"]))
        #expect(try await session.nextLine(timeout: .seconds(30)) == "ready")
        let waiting = Task { try await session.nextLine(timeout: .seconds(600)) }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
        for _ in 0..<100 where session.standardErrorTail().isEmpty {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(session.standardErrorTail() == "something went wrong\n")
        await session.stop(grace: .zero)
    }

    @Test func aRunnerThatCannotKeepAProcessSaysSo() throws {
        #expect(throws: ProcessError.self) { _ = try ScriptedRunner([]).session(ProcessCommand("/bin/cat")) }
    }
}
