import DeviceSpec
import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployKit
@testable import HADeployReporting

/// Issue 25: what the run does with a report it cannot write, a huge --jobs, hostile text in a
/// device's reason, a second run on the same state folder.
extension DeployExecutorTests {
    struct HostileFailure: Error, CustomStringConvertible {
        var description: String {
            "\u{1B}[2J\u{1B}[31mred\u{1B}[0m\r\n::error file=devices.yaml,line=1::injected\n  ##[error]old "
                + "\u{9B}2J\u{202E}"
        }
    }

    /// Before: a warning, the run's exit 0, and "report: …" naming a report that was never written.
    @Test func aReportThatCannotBeWrittenFailsTheRunAndSaysWhy() async throws {
        let root = try temporaryDirectory()
        let blocker = root.appendingPathComponent("blocker")
        try Data("a file".utf8).write(to: blocker)
        let sink = RecordingOutputSink()
        var env = environment(
            drivers: ["a": ScriptedDriver(), "b": ScriptedDriver(), "c": ScriptedDriver()],
            report: blocker.appendingPathComponent("report"), locks: root)
        env.reporter = PlainReporter(output: sink, clock: TestHost.clock)
        let report = await DeployExecutor(plan: try makePlan(), environment: env).run()
        #expect(report.results.allSatisfy { $0.succeeded })
        #expect(report.exitCode == ExitStatus.failure.rawValue)
        let problem = try #require(report.reportProblem)
        #expect(problem.contains("\(blocker.path) is a file, not a folder"), "\(problem)")
        #expect(sink.standardOutput.contains("error: could not write the report"), "\(sink.standardOutput)")
    }

    /// Before: `for _ in 0..<jobs` started a slot per job, 99,999,999,999 times, at 100 % CPU.
    @Test(.timeLimit(.minutes(1))) func aHugeJobsCountStartsNoMoreSlotsThanDevices() async throws {
        let root = try temporaryDirectory()
        let report = await DeployExecutor(
            plan: try makePlan(),
            environment: environment(
                drivers: ["a": ScriptedDriver(), "b": ScriptedDriver(), "c": ScriptedDriver()], report: nil,
                locks: root, jobs: Int.max)
        ).run()
        #expect(report.results.map(\.outcome) == [.unverified, .unverified, .unverified])
    }

    /// A device's reason (a peer's words) reaches the terminal with its escape sequences visible and
    /// no line of it taken for a GitHub workflow command.
    @Test func hostileReasonsArePrintedNeutralisedByEveryReporter() async throws {
        let root = try temporaryDirectory()
        for makeReporter in [
            { (sink: RecordingOutputSink) -> any DeployReporter in
                PlainReporter(output: sink, clock: TestHost.clock)
            },
            { (sink: RecordingOutputSink) -> any DeployReporter in
                TerminalReporter(output: sink, clock: TestHost.clock)
            },
        ] {
            let sink = RecordingOutputSink()
            var env = environment(
                drivers: [
                    "a": ScriptedDriver(), "b": ScriptedDriver(installError: HostileFailure()),
                    "c": ScriptedDriver(),
                ],
                report: root.appendingPathComponent("report-\(UUID().uuidString.prefix(6))"), locks: root)
            env.reporter = makeReporter(sink)
            let report = await DeployExecutor(plan: try makePlan(), environment: env).run()
            #expect(report.results[1].outcome == .failed)
            let printed = sink.standardOutput + sink.standardError
            #expect(printed.contains("\\u001B[31mred"), "\(printed)")
            #expect(
                !printed.contains("\u{1B}[31m") && !printed.contains("\u{1B}[2J") && !printed.contains("\r"))
            for line in printed.split(separator: "\n") {
                let trimmed = line.drop { $0 == " " || $0 == "\t" }
                #expect(!trimmed.hasPrefix("::") && !trimmed.hasPrefix("##["), "\(line)")
            }
            #expect(printed.contains("\\::error file=devices.yaml"))
            // The report files keep the words, escaped for their format.
            let directory = try #require(env.reportDirectory)
            let html = try String(contentsOf: directory.appendingPathComponent("index.html"), encoding: .utf8)
            #expect(!html.contains("\u{1B}") && html.contains("::error file=devices.yaml"))
            let junit = try String(contentsOf: directory.appendingPathComponent("junit.xml"), encoding: .utf8)
            #expect(!junit.contains("\u{1B}"))
        }
    }

    /// `--json` stays one valid JSON object per line with the same reason (the sink's escapes are
    /// JSON escapes), and the reason decodes to what the device said.
    @Test func hostileReasonsKeepJSONLinesValid() async throws {
        let root = try temporaryDirectory()
        let sink = RecordingOutputSink()
        var env = environment(
            drivers: [
                "a": ScriptedDriver(), "b": ScriptedDriver(installError: HostileFailure()),
                "c": ScriptedDriver(),
            ],
            report: nil, locks: root)
        env.reporter = JSONLinesReporter(output: sink, clock: TestHost.clock)
        _ = await DeployExecutor(plan: try makePlan(), environment: env).run()
        var reasons: [String] = []
        for line in sink.standardOutput.split(separator: "\n") {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if let result = object["result"] as? [String: Any], let reason = result["reason"] as? String {
                reasons.append(reason)
            }
        }
        #expect(reasons.contains { $0.contains("::error file=devices.yaml") && $0.contains("red") })
    }

    /// Before: nothing stopped a second `--virtual` run from resetting the first one's twins.
    @Test func aSecondRunOnTheSameStateFolderIsRefusedWithTheOwnersPID() throws {
        let root = try temporaryDirectory()
        let state = root.appendingPathComponent("virtual")
        let held = try StateFolderLock.acquire(
            state, displayName: ".hadeploy/virtual", fileSystem: TestHost.fileSystem)
        #expect(throws: StateFolderBusy.self) {
            try StateFolderLock.acquire(
                state, displayName: ".hadeploy/virtual", fileSystem: TestHost.fileSystem)
        }
        do {
            _ = try StateFolderLock.acquire(
                state, displayName: ".hadeploy/virtual", fileSystem: TestHost.fileSystem)
        } catch {
            #expect("\(error)".contains("another hadeploy run (pid \(getpid())) is using .hadeploy/virtual"))
        }
        withExtendedLifetime(held) {}
    }
}
