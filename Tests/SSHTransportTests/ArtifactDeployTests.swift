import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployKit
import HADeployReporting
import SSHTestPeers
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The real `hadeploy` binary deploying one artifact to several jailbroken twins (real sshd each):
/// every device gets exactly the app that was inspected — complete, the right one, for its iOS.
@Suite("artifacts deployed over SSH to several jailbroken twins", .serialized)
struct ArtifactDeployTests {
    /// A project whose devices.yaml lists one SSH device per twin.
    final class Fleet: @unchecked Sendable {
        struct Member {
            var id: String
            var flavour: String
            var ios: String
            var arch: String
        }

        let root: URL
        let twins: [JailbreakTwin]
        let members: [Member]
        let knownHosts: String

        init(_ members: [Member]) async throws {
            var twins: [JailbreakTwin] = []
            do {
                for _ in members { twins.append(try await JailbreakTwin.start(.openssh)) }
            } catch {
                for twin in twins { twin.stopAndClean() }
                throw error
            }
            self.twins = twins
            self.members = members
            root = try TestEnvironment.makeDirectory("hadeploy-fleet")
            knownHosts = root.appendingPathComponent("known_hosts").path
            var lines: [String] = []
            for twin in twins { lines += try await twin.knownHostsLines() }
            try (lines.joined(separator: "\n") + "\n").write(
                toFile: knownHosts, atomically: true, encoding: .utf8)
            var yaml = """
                version: 1
                flavours:
                  legacy: {archs: [armv7, arm64], deployment_target: "9.0", sdk: iphoneos}
                  modern: {archs: [arm64], deployment_target: "12.0", sdk: iphoneos}
                devices:

                """
            for (member, twin) in zip(members, twins) {
                yaml += """
                      \(member.id):
                        product_type: iPad2,1
                        ios: "\(member.ios)"
                        arch: \(member.arch)
                        flavour: \(member.flavour)
                        transport: ssh
                        host: 127.0.0.1
                        dashboard: ""
                        ssh: {user: root, port: \(twin.port), key: \(TestEnvironment.ed25519Key)}
                        timeouts: {install: 300}

                    """
            }
            try yaml.write(to: root.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
            try "BUNDLE_ID=io.hadeploy.demo\n".write(
                to: root.appendingPathComponent(".env"), atomically: true, encoding: .utf8)
            try ".env\nartifacts/\n.hadeploy/\nreport*/\nknown_hosts\n".write(
                to: root.appendingPathComponent(".gitignore"), atomically: true, encoding: .utf8)
            try await GitRepository.commitAll(at: root, tag: "v1.0.0")
        }

        func twin(_ id: String) -> JailbreakTwin {
            twins[members.firstIndex { $0.id == id }!]
        }

        /// A demo app of `flavour` (requiring iOS `minimumOS`) with `files` extra small files in folders,
        /// as `<directory>/<flavour>/HADashboard.app`.
        func app(
            build: Int, flavour name: String = "legacy", files: Int = 0, minimumOS: String = "9.0",
            in directory: String = "apps"
        ) throws -> URL {
            let flavour = Flavour(
                name: name, xcode: nil, archs: name == "legacy" ? [.armv7, .arm64] : [.arm64],
                deploymentTarget: minimumOS, sdk: "iphoneos", configuration: "Release", scheme: nil,
                settings: [:], location: SourceLocation(file: "devices.yaml", line: 1))
            let artifact = try DemoAppBuilder(bundleID: "io.hadeploy.demo").build(
                flavour: flavour, marketingVersion: "1.0.\(build)", buildNumber: build,
                into: root.appendingPathComponent(directory), now: Date(), in: TestHost.fileSystem)
            let app = URL(fileURLWithPath: artifact.path)
            for index in 0..<files {
                let folder = app.appendingPathComponent("Assets/\(index % 37)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try Data("build \(build) file \(index)\n".utf8).write(
                    to: folder.appendingPathComponent("file-\(index).txt"))
            }
            return app
        }

        /// `Payload/<each app>` zipped by Info-ZIP's `zip` into `name`.
        func ipa(_ apps: [URL], name: String) async throws -> URL {
            let staging = root.appendingPathComponent("ipa-\(UUID().uuidString)/Payload")
            try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
            for app in apps {
                try FileManager.default.copyItem(
                    at: app, to: staging.appendingPathComponent(app.lastPathComponent))
            }
            let ipa = root.appendingPathComponent(name)
            try? FileManager.default.removeItem(at: ipa)
            _ = try await TestHost.runner.checked(
                ProcessCommand(
                    "zip", ["-qry", ipa.path, "Payload"],
                    workingDirectory: staging.deletingLastPathComponent().path),
                timeout: .seconds(120))
            try FileManager.default.removeItem(at: staging.deletingLastPathComponent())
            return ipa
        }

        /// `hadeploy deploy ARGS --no-build --no-verify --json` (no --report: no screenshot waits).
        func deploy(_ arguments: [String]) async throws -> HADeployBinary.Result {
            let result = try await HADeployBinary.run(
                ["deploy"] + arguments + ["--no-build", "--no-verify", "--json"], in: root,
                environment: ["HADEPLOY_KNOWN_HOSTS": knownHosts, "XDG_CACHE_HOME": root.path + "/cache"],
                timeout: .seconds(600))
            lastOutput = result.stdout
            return result
        }

        private(set) var lastOutput = ""

        /// The run_finished line's report.
        func report() throws -> DeployReport {
            struct Line: Decodable {
                var event: String
                var report: DeployReport?
            }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            for line in lastOutput.split(separator: "\n") {
                if let parsed = try? decoder.decode(Line.self, from: Data(line.utf8)),
                    let report = parsed.report
                {
                    return report
                }
            }
            throw NoReport(output: String(lastOutput.suffix(2000)))
        }

        struct NoReport: Error, CustomStringConvertible {
            var output: String
            var description: String { "no run_finished line in: \(output)" }
        }

        func stop() {
            for twin in twins { twin.stopAndClean() }
            TestEnvironment.remove(root)
        }
    }

    /// Relative path → contents of every regular file and link of a bundle (links by their target).
    static func manifest(_ app: URL) -> [String: Data] {
        var result: [String: Data] = [:]
        let manager = FileManager.default
        for path in (try? manager.subpathsOfDirectory(atPath: app.path)) ?? [] {
            let full = app.appendingPathComponent(path).path
            let type = (try? manager.attributesOfItem(atPath: full))?[.type] as? FileAttributeType
            if type == .typeSymbolicLink {
                result[path] = Data(
                    ("link " + ((try? manager.destinationOfSymbolicLink(atPath: full)) ?? "")).utf8)
            } else if type == .typeRegular, let data = manager.contents(atPath: full) {
                result[path] = data
            }
        }
        return result
    }

    /// What `ldid -S` changes (the executable) aside, the installed bundle is the artifact's; on iOS 9
    /// and 10 (`strippedOn9`) without Apple's signature and the provisioning profile, which hadeploy
    /// leaves out there.
    static func expectSameApp(_ installed: URL, _ artifact: URL, _ label: String, strippedOn9: Bool = true) {
        var expected = manifest(artifact)
        if strippedOn9 {
            expected = expected.filter {
                $0.key != "embedded.mobileprovision" && !$0.key.hasPrefix("_CodeSignature")
            }
            #expect(manifest(installed)["embedded.mobileprovision"] == nil, "\(label): the profile was sent")
        }
        var found = manifest(installed)
        #expect(
            found.count == expected.count, "\(label): \(found.count) of \(expected.count) files installed")
        #expect(found["HADashboard"] != nil, "\(label): no executable")
        expected["HADashboard"] = nil
        found["HADashboard"] = nil
        let wrong = expected.keys.filter { found[$0] != expected[$0] }.sorted()
        #expect(wrong.isEmpty, "\(label): \(wrong.count) files missing or different, e.g. \(wrong.prefix(3))")
    }

    /// Four devices of one flavour from one .ipa in one run, two rounds (the second a new build over
    /// the first): each twin ends with the complete app. They used to share one unzip folder that each device emptied
    /// and refilled while the others uploaded from it.
    @Test("four SSH devices of one flavour each get the complete app, round after round")
    func severalDevicesOfOneFlavourEachGetTheCompleteApp() async throws {
        let ids = ["ipad-a", "ipad-b", "ipad-c", "ipad-d"]
        let fleet = try await Fleet(ids.map { .init(id: $0, flavour: "legacy", ios: "9.3.5", arch: "armv7") })
        defer { fleet.stop() }
        for build in 1...2 {
            let app = try fleet.app(build: build, files: 1_500)
            let ipa = try await fleet.ipa([app], name: "HADashboard-\(build).ipa")
            let result = try await fleet.deploy(["all", "--artifact", ipa.path])
            #expect(result.status == 0, "round \(build): \(result.stderr.suffix(2000))")
            let report = try fleet.report()
            for device in report.results {
                #expect(device.outcome == .unverified, "round \(build) \(device.id): \(device.reason ?? "")")
            }
            for id in ids {
                Self.expectSameApp(
                    fleet.twin(id).url("/Applications/HADashboard.app"), app, "round \(build) \(id)")
            }
            // Unpacked once for the run, and nothing of it left behind.
            let state = fleet.root.appendingPathComponent(".hadeploy/virtual")
            let leftovers =
                ((try? FileManager.default.subpathsOfDirectory(atPath: state.path)) ?? []).filter {
                    $0.hasSuffix(".app") || $0.hasSuffix("Info.plist")
                }
            #expect(leftovers.isEmpty, "round \(build): unpacked copies left: \(leftovers.prefix(5))")
        }
    }

    /// `--artifact link.app` where link.app is a symbolic link to the bundle: the bundle is installed,
    /// not the (empty) listing of the link.
    @Test("a symbolic link to the .app installs the whole bundle")
    func aSymlinkedAppInstallsTheWholeBundle() async throws {
        let fleet = try await Fleet([.init(id: "ipad2", flavour: "legacy", ios: "9.3.5", arch: "armv7")])
        defer { fleet.stop() }
        let app = try fleet.app(build: 1, files: 20)
        let link = fleet.root.appendingPathComponent("current.app")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: app)
        let result = try await fleet.deploy(["ipad2", "--artifact", link.path])
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        Self.expectSameApp(fleet.twin("ipad2").url("/Applications/HADashboard.app"), app, "ipad2")
    }

    /// An .ipa holding two apps: inspected as one, it was installed as the other. Now refused, naming
    /// both, before any device is touched.
    @Test("an .ipa with two apps is refused by name; no device is touched")
    func anIpaWithTwoAppsIsRefused() async throws {
        let fleet = try await Fleet([.init(id: "ipad2", flavour: "legacy", ios: "9.3.5", arch: "armv7")])
        defer { fleet.stop() }
        let first = try fleet.app(build: 1, in: "one")
        let other = try fleet.app(build: 2, files: 3, in: "two")
        let renamed = other.deletingLastPathComponent().appendingPathComponent("Another.app")
        try FileManager.default.moveItem(at: other, to: renamed)
        let ipa = try await fleet.ipa([first, renamed], name: "Two.ipa")
        let before = JailbreakTwinTests.snapshot(fleet.twin("ipad2").url("/Applications"))
        let result = try await fleet.deploy(["ipad2", "--artifact", ipa.path])
        #expect(result.status != 0)
        #expect(
            result.stderr.contains("holds 2 apps (Payload/Another.app, Payload/HADashboard.app)"),
            "\(result.stderr.suffix(2000))")
        #expect(JailbreakTwinTests.snapshot(fleet.twin("ipad2").url("/Applications")) == before)
    }

    /// An app whose Info.plist requires iOS 99 is refused for the iOS 9.3.5 iPad before anything on
    /// it changes; the other device of the run (another flavour, its own app) is deployed.
    @Test("MinimumOSVersion 99 is refused for the iOS 9.3.5 device before it is touched; the other deploys")
    func anAppForANewerIOSIsRefusedBeforeTheDeviceIsTouched() async throws {
        let fleet = try await Fleet([
            .init(id: "ipad2", flavour: "legacy", ios: "9.3.5", arch: "armv7"),
            .init(id: "mini5", flavour: "modern", ios: "12.5.7", arch: "arm64"),
        ])
        defer { fleet.stop() }
        _ = try fleet.app(build: 1, flavour: "legacy", minimumOS: "99.0", in: "artifacts")
        let modern = try fleet.app(build: 1, flavour: "modern", minimumOS: "12.0", in: "artifacts")
        let ipad2 = fleet.twin("ipad2")
        let applications = JailbreakTwinTests.snapshot(ipad2.url("/Applications"))
        let mobile = JailbreakTwinTests.snapshot(ipad2.url("/var/mobile/Library"))
        let result = try await fleet.deploy(["all", "--artifacts", "artifacts"])
        #expect(result.status == 1, "\(result.stderr.suffix(2000))")
        let byID = Dictionary(uniqueKeysWithValues: try fleet.report().results.map { ($0.id, $0) })
        #expect(byID["ipad2"]?.outcome == .failed)
        let reason = byID["ipad2"]?.reason ?? ""
        #expect(reason.contains("needs iOS 99.0 or later"), "\(reason)")
        #expect(reason.contains("runs iOS 9.3.5 — nothing was touched"), "\(reason)")
        #expect(byID["ipad2"]?.steps.isEmpty == true, "no step ran: \(byID["ipad2"]?.steps ?? [])")
        #expect(JailbreakTwinTests.snapshot(ipad2.url("/Applications")) == applications)
        #expect(JailbreakTwinTests.snapshot(ipad2.url("/var/mobile/Library")) == mobile)
        #expect(byID["mini5"]?.outcome == .unverified, "\(byID["mini5"]?.reason ?? "")")
        Self.expectSameApp(
            fleet.twin("mini5").url("/Applications/HADashboard.app"), modern, "mini5", strippedOn9: false)
    }
}
