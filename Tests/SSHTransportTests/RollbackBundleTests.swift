import Foundation
import HADeployCore
import HADeployKit
import TestSupport
import Testing

/// `hadeploy rollback ipad2` right after deploys with `--artifact` and no `BUNDLE_ID` anywhere: the
/// deploy remembered the app it installed (`.hadeploy/deployed/ipad2.json`); without that record (a
/// fresh clone) the device's backups name it. Before: exit 78, "no bundle id: pass --bundle-id or set
/// BUNDLE_ID in .env".
@Suite("rollback knows which app it rolls back")
struct RollbackBundleTests {
    @Test("after two --artifact deploys without BUNDLE_ID, rollback puts the first build back")
    func rollbackAfterArtifactDeploysWithoutBundleID() async throws {
        let project = try await JailbreakCLITests.Project(bytesPerSecond: 50_000_000)
        defer { project.stop() }
        // The server and the token only: nothing here names the app.
        try "HA_SERVER=\(project.ha.url)\nHA_TOKEN=\(project.ha.token)\n".write(
            to: project.root.appendingPathComponent(".env"), atomically: true, encoding: .utf8)
        let environment = ["HADEPLOY_KNOWN_HOSTS": project.knownHosts]
        let installed = project.twin.url("/Applications/HADashboard.app")

        let v1 = try project.app(build: 1)
        let first = try await HADeployBinary.run(
            project.deployArguments(v1), in: project.root, environment: environment, timeout: .seconds(180))
        #expect(first.status == 0, "\(first.stderr)")
        let v1Snapshot = JailbreakTwinTests.snapshot(installed)
        #expect(v1Snapshot["Info.plist"] == (try Data(contentsOf: v1.appendingPathComponent("Info.plist"))))

        let v2 = try project.app(build: 2, extraBytes: 1 << 16)
        let second = try await HADeployBinary.run(
            project.deployArguments(v2), in: project.root, environment: environment, timeout: .seconds(180))
        #expect(second.status == 0, "\(second.stderr)")
        #expect(JailbreakTwinTests.snapshot(installed)["payload.bin"] != nil, "build 2 is installed")

        let record = try #require(
            DeployRecords(
                directory: project.root.appendingPathComponent(".hadeploy/deployed"),
                fileSystem: TestHost.fileSystem
            )
            .read(device: "ipad2"))
        #expect(record.bundleID == "io.hadeploy.demo")
        #expect(record.marketingVersion == "1.0.2")

        let rolled = try await HADeployBinary.run(
            ["rollback", "ipad2"], in: project.root, environment: environment, timeout: .seconds(180))
        #expect(rolled.status == 0, "\(rolled.stdout)\(rolled.stderr)")
        #expect(rolled.stdout.contains("restored /Applications/HADashboard.app"), "\(rolled.stdout)")
        // Build 1 again, byte for byte (its Info.plist says 1.0.1; build 2's payload is gone).
        #expect(JailbreakTwinTests.snapshot(installed) == v1Snapshot)
        let info = try #require(project.twin.data("/Applications/HADashboard.app/Info.plist"))
        let plist = try PropertyListSerialization.propertyList(from: info, format: nil) as? [String: Any]
        #expect(plist?["CFBundleShortVersionString"] as? String == "1.0.1")

        // A fresh clone has no record: the backups on the device name the app.
        try FileManager.default.removeItem(at: project.root.appendingPathComponent(".hadeploy/deployed"))
        let listed = try await HADeployBinary.run(
            ["rollback", "ipad2", "--list"], in: project.root, environment: environment,
            timeout: .seconds(120))
        #expect(listed.status == 0, "\(listed.stdout)\(listed.stderr)")
        let names = listed.stdout.split(separator: "\n").filter { !$0.isEmpty }
        #expect(!names.isEmpty && !listed.stdout.contains("no backups"), "\(listed.stdout)")
    }
}
