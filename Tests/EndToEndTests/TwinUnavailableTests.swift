import DeployModel
import Foundation
import HADeployCore
import HADeployKit
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `--virtual` when the iPad 2's jailbroken twin cannot be had on this host (its sshd is missing, or
/// hadeploy does not run as root): only the iPad 2 ends "not available", with the reason and the fix;
/// the iPad mini 4 of the same run still deploys to its USB twin and is verified.
@Suite(.serialized)
struct TwinUnavailableTests {
    /// A checkout with the iPad 2 (SSH: a jailbroken twin) and the iPad mini 4 (USB twin).
    static func project(_ ha: HomeAssistantServer) async throws -> URL {
        let root = try temporaryDirectory("twin-missing")
        try await JailbreakProject.create(
            at: root, withMini4: true,
            files: [
                ".env": "HA_SERVER=\(ha.url)\nHA_TOKEN=\(ha.token)\n",
                ".gitignore": ".env\n.hadeploy/\nreport*/\ntwin-*.sh\n",
            ])
        return root
    }

    static func report(_ root: URL) throws -> [String: DeviceResult] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let report = try decoder.decode(
            DeployReport.self, from: Data(contentsOf: root.appendingPathComponent("report/summary.json")))
        return Dictionary(uniqueKeysWithValues: report.results.map { ($0.id, $0) })
    }

    /// What the demo did on a machine where `make test` never ran: the twin's chroot found no sshd.
    /// Before: `error: jailbreak twin: cannot use ssh: the twin did not start: chroot: …`, exit 78,
    /// no report, and the iPad mini 4 never deployed.
    @Test func aTwinThatDoesNotStartMakesOnlyItsDeviceNotAvailable() async throws {
        let ha = try await HomeAssistantServer.shared()
        let root = try await Self.project(ha)
        defer { try? FileManager.default.removeItem(at: root) }
        let script = root.appendingPathComponent("twin-without-sshd.sh")
        try """
        #!/bin/sh
        echo "chroot: failed to run command '/usr/sbin/sshd': No such file or directory" >&2
        exit 127

        """.write(to: script, atomically: true, encoding: .utf8)

        let run = try await HADeployBinary.run(
            ["ipad2", "mini4", "--virtual", "--no-build", "--report", "report"], in: root,
            environment: ["HADEPLOY_JAILBREAK_TWIN": script.path], timeout: .seconds(240))
        // A device this host cannot drive is not a failure of the run (as a simulator on Linux).
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let results = try Self.report(root)
        let ipad2 = try #require(results["ipad2"], "\(run.stderr)")
        #expect(ipad2.outcome == .notAvailable)
        let reason = ipad2.reason ?? ""
        #expect(reason.contains("the jailbroken twin did not start"), "\(reason)")
        #expect(reason.contains("'/usr/sbin/sshd': No such file or directory"), "\(reason)")
        #expect(reason.contains("apt-get install openssh-server"), "\(reason)")
        #expect(!reason.contains("\n"), "one line in the table: \(reason)")
        let mini4 = try #require(results["mini4"])
        #expect(mini4.outcome == .succeeded, "\(mini4.reason ?? "")")
        guard case .loaded = mini4.verification else {
            Issue.record("mini4 not verified: \(mini4.verification)")
            return
        }
        // The closing table says it too, one line per device.
        let table = run.stderr.split(separator: "\n").map(String.init)
        #expect(
            table.contains { $0.hasPrefix("ipad2 ") && $0.contains("not available") && $0.contains("sshd") },
            "\(run.stderr)")
        #expect(table.contains { $0.hasPrefix("mini4 ") && $0.contains("succeeded") }, "\(run.stderr)")
    }

    /// The attack on an installed hadeploy: another local user plants a twin.sh where hadeploy looks for
    /// one (before: the checkout path the release binary was compiled in, which any user could create
    /// on another machine; it ran as root). A twin script in a folder other users can write is refused,
    /// never run; the installed binary carries its own (share/hadeploy/jailbreak-twin).
    @Test func aTwinScriptAnotherUserCouldHaveWrittenIsNeverRun() async throws {
        let ha = try await HomeAssistantServer.shared()
        let root = try await Self.project(ha)
        defer { try? FileManager.default.removeItem(at: root) }
        let shared = root.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
        #expect(chmod(shared.path, 0o777) == 0)
        let marker = root.appendingPathComponent("planted-script-ran")
        let script = shared.appendingPathComponent("twin.sh")
        try "#!/bin/sh\ntouch '\(marker.path)'\nexit 1\n".write(to: script, atomically: true, encoding: .utf8)

        let run = try await HADeployBinary.run(
            ["ipad2", "mini4", "--virtual", "--no-build", "--report", "report"], in: root,
            environment: ["HADEPLOY_JAILBREAK_TWIN": script.path], timeout: .seconds(240))
        #expect(!FileManager.default.fileExists(atPath: marker.path), "the planted script ran")
        let results = try Self.report(root)
        let ipad2 = try #require(results["ipad2"], "\(run.stderr)")
        #expect(ipad2.outcome == .notAvailable)
        let reason = ipad2.reason ?? ""
        #expect(reason.contains("refusing to run the jailbroken twin's script"), "\(reason)")
        #expect(reason.contains("shared can be changed by other users (mode 777)"), "\(reason)")
        #expect(results["mini4"]?.outcome == .succeeded, "\(run.stderr)")

        // The binary under test is the installed layout's: it carries the twin it runs.
        let binary = URL(fileURLWithPath: try await HADeployBinary.path).resolvingSymlinksInPath()
        let carried = binary.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("share/hadeploy/jailbreak-twin")
        for file in ["twin.sh", "app.py", "springboard.py"] {
            #expect(
                FileManager.default.fileExists(atPath: carried.appendingPathComponent(file).path),
                "\(carried.path) has no \(file)")
        }
    }

    /// Not as root the jailbroken twin cannot run (chroot, namespaces). Before, the iPad 2 silently got a
    /// USB twin — a path the real (SSH) deploy does not take; now it is "not available" with the fix.
    @Test func notAsRootTheSSHDeviceIsNotAvailableAndSaysWhy() async throws {
        #expect(getuid() == 0, "the test switches to an unprivileged user: run it as root")
        let ha = try await HomeAssistantServer.shared()
        let root = try await Self.project(ha)
        defer { try? FileManager.default.removeItem(at: root) }
        let nobody = "65534"
        _ = try await LiveProcessRunner().checked(
            ProcessCommand("chown", ["-R", "\(nobody):\(nobody)", root.path]), timeout: .seconds(30))
        var variables = HADeployBinary.baseEnvironment(home: root)
        variables["XDG_CACHE_HOME"] = root.appendingPathComponent("cache").path
        let output = try await LiveProcessRunner().run(
            ProcessCommand(
                "setpriv",
                ["--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", "/usr/bin/env", "-i"]
                    + variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                    + [try await HADeployBinary.path, "plan", "ipad2", "mini4", "--virtual", "--json"],
                workingDirectory: root.path),
            timeout: .seconds(120))
        #expect(output.status == 0, "\(output.stderr)")
        let plan = try #require(
            try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any],
            "\(output.stdout)")
        let devices = try #require(plan["devices"] as? [[String: Any]])
        let availability = Dictionary(
            uniqueKeysWithValues: devices.map {
                ($0["id"] as? String ?? "", $0["availability"] as? String ?? "")
            })
        #expect(
            availability["ipad2"]
                == "not available on this host: the jailbroken twin needs root (chroot, namespaces): run as "
                + "root or with sudo", "\(availability)")
        #expect(availability["mini4"] == "available", "\(availability)")
    }
}
