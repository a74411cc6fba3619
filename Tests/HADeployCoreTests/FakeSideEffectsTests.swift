import Foundation
import HADeployCore
import TestSupport
import Testing

/// The fakes tests run against fail the test when code reaches past what the test set up.
@Suite struct FakeSideEffectsTests {
    @Test func theFakeFileSystemRefusesPathsOutsideItsRoot() throws {
        let files = FakeFileSystem()
        try files.place("devices: {}\n", at: "devices.yaml")
        let inside = files.currentDirectory.appendingPathComponent("devices.yaml")
        #expect(files.fileExists(atPath: inside.path))
        #expect(files.contents(atPath: inside.path) == Data("devices: {}\n".utf8))
        withKnownIssue {
            #expect(files.contents(atPath: "/etc/hostname") == nil)
        } matching: { issue in
            "\(issue)".contains("contents(atPath: /etc/hostname)")
        }
        withKnownIssue {
            #expect(throws: FakeFileSystem.OutsideRoot.self) {
                try files.write(Data(), to: inside.appendingPathComponent("../../../escape"))
            }
        }
    }

    @Test func theFakeClockMustBeGivenATime() async throws {
        withKnownIssue {
            _ = FakeClock().now()
        } matching: { issue in
            "\(issue)".contains("now()")
        }
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let clock = FakeClock(now: start)
        try await clock.sleep(for: .seconds(90))
        clock.advance(by: .milliseconds(500))
        #expect(clock.now() == start.addingTimeInterval(90.5))
        #expect(clock.sleeps == [.seconds(90)])
        withKnownIssue {
            _ = FakeClock().instant()
        } matching: { issue in
            "\(issue)".contains("instant()")
        }
    }

    @Test func theFakeClocksInstantMovesWithItAndDeadlinesFollow() async throws {
        let clock = FakeClock(now: Date(timeIntervalSince1970: 1_700_000_000))
        let start = clock.instant()
        let deadline = clock.deadline(after: .seconds(10))
        try await clock.sleep(for: .seconds(3))
        clock.advance(by: .seconds(2))
        #expect(clock.elapsed(since: start) == .seconds(5))
        #expect(clock.remaining(until: deadline) == .seconds(5))
        try await clock.sleep(until: deadline)
        #expect(clock.sleeps == [.seconds(3), .seconds(5)])
        #expect(clock.remaining(until: deadline) == .zero)
        // A deadline that has passed is not slept for.
        try await clock.sleep(until: start)
        #expect(clock.sleeps.count == 2)
    }

    @Test func theFakeEnvironmentAnswersOnlyWhatItWasGiven() {
        let environment = FakeEnvironment(["HOME": "/home/me"], hostName: "kiosk")
        #expect(environment.variables == ["HOME": "/home/me"])
        #expect(environment.hostName == "kiosk")
        withKnownIssue {
            _ = environment.processIdentifier
        } matching: { issue in
            "\(issue)".contains("processIdentifier")
        }
    }

    @Test func aFakeContextRunsNoCommand() async {
        let context = HADeployContext.fake(fileSystem: FakeFileSystem())
        await withKnownIssue {
            _ = try await context.runner.run(ProcessCommand("git", ["status"]), timeout: .seconds(1))
        }
    }
}
