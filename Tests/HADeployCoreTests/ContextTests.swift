import Foundation
import HADeployCore
import TestSupport
import Testing

@Suite struct ContextTests {
    func context(home: String? = "/home/me") -> HADeployContext {
        HADeployContext(
            environment: home.map { ["HOME": $0] } ?? [:], runner: TestHost.runner,
            output: RecordingOutputSink(), currentDirectory: URL(fileURLWithPath: "/work/project"),
            fileSystem: FakeFileSystem(), clock: FakeClock(), system: FakeEnvironment())
    }

    @Test func pathsResolveAgainstTheWorkingDirectoryAndHome() {
        #expect(context().url(for: "devices.yaml").path == "/work/project/devices.yaml")
        #expect(context().url(for: "/etc/hadeploy.yaml").path == "/etc/hadeploy.yaml")
        #expect(context().url(for: "~/keys/id").path == "/home/me/keys/id")
    }

    @Test func resultsGoToStdoutAndMessagesToStderr() {
        let sink = RecordingOutputSink()
        let context = HADeployContext(
            environment: [:], runner: TestHost.runner, output: sink,
            currentDirectory: URL(fileURLWithPath: "/"), fileSystem: FakeFileSystem(), clock: FakeClock(),
            system: FakeEnvironment())
        context.print("1.0.0 (3)")
        context.message("warning: no tag")
        #expect(sink.standardOutput == "1.0.0 (3)\n")
        #expect(sink.standardError == "warning: no tag\n")
    }
}
