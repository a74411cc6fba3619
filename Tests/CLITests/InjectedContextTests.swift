import ArgumentParser
import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployCLI

/// Commands run in-process with a context of fakes: the files are the fake file system's (a
/// devices.yaml and templates in its working folder), the clock is a fake one, no command may run.
@Suite struct InjectedContextTests {
    static let start = Date(timeIntervalSince1970: 1_750_000_000)

    @Test func planReportsABadDeviceNameAtItsLineFromTheInjectedFiles() async throws {
        let files = FakeFileSystem()
        // A device key that is no plain name: a configuration error at its line (DeviceNameTests).
        try files.place(DeviceNameTests.yaml(key: "\"../x\""), at: "devices.yaml")
        let output = RecordingOutputSink()
        let context = HADeployContext.fake(
            fileSystem: files, clock: FakeClock(now: Self.start), output: output)
        let command = try PlanCommand.parse(["all"])
        await #expect(throws: ExitCode(ExitStatus.config.rawValue)) {
            try await command.run(reportingTo: context)
        }
        #expect(output.standardOutput.isEmpty)
        #expect(
            output.standardError == """
                error: devices.yaml is not valid (1 problem):
                devices.yaml:5:3: error: the device name '../x' must start with a letter or a digit

                """)
    }

    @Test func renderWritesIntoTheInjectedFilesAndSaysWhat() async throws {
        let files = FakeFileSystem()
        try files.place("TEAM=ABCDE12345\n", at: ".env")
        try files.place("team: {{TEAM}}\n", at: "Templates/project.yml.mustache")
        let output = RecordingOutputSink()
        let context = HADeployContext.fake(
            fileSystem: files, clock: FakeClock(now: Self.start), output: output)

        try await RenderCommand.parse([]).run(reportingTo: context)
        #expect(output.standardError == "Generated/project.yml: created\n")
        let written = files.currentDirectory.appendingPathComponent("Generated/project.yml")
        #expect(files.contents(atPath: written.path) == Data("team: ABCDE12345\n".utf8))

        let check = RecordingOutputSink()
        var stale = HADeployContext.fake(fileSystem: files, clock: FakeClock(now: Self.start), output: check)
        stale.environment["TEAM"] = "ZYXWV98765"
        await #expect(throws: ExitCode(ExitStatus.failure.rawValue)) {
            try await RenderCommand.parse(["--check"]).run(reportingTo: stale)
        }
        #expect(
            check.standardError
                == "Generated/project.yml: would be updated\n1 file(s) out of date: run `hadeploy render`\n")
    }
}
