import Foundation
import HADeployCore
import HADeployKit
import TestSupport
import Testing

@Suite struct WorkspaceTests {
    @Test func theEnvironmentOverridesDotEnvAndWarningsGoToStderr() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-workspace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("HA_SERVER=http://file\nHA_TOKEN=file-token\nnot valid\nBUNDLE_ID=${PREFIX}.app\n".utf8)
            .write(to: directory.appendingPathComponent("ci.env"))
        let sink = RecordingOutputSink()
        let context = HADeployContext(
            environment: ["HA_TOKEN": "env-token", "PREFIX": "com.example"], runner: TestHost.runner,
            output: sink, currentDirectory: directory, fileSystem: TestHost.fileSystem, clock: FakeClock(),
            system: FakeEnvironment())
        let workspace = Workspace(context: context, configPath: "devices.yaml", envFilePath: "ci.env")
        let (values, dotEnv) = try workspace.loadVariables()
        #expect(values["HA_TOKEN"] == "env-token")
        #expect(values["HA_SERVER"] == "http://file")
        #expect(values["BUNDLE_ID"] == "com.example.app")
        #expect(dotEnv.values["HA_TOKEN"] == "file-token")
        #expect(sink.standardOutput.isEmpty)
        #expect(
            sink.standardError
                == "warning: ci.env:3: could not parse this line; it was ignored\n",
            "named as the user gave it")
    }
}
