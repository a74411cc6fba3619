import DeployModel
import Foundation
import HADeployCore
import HADeployKit
import HomeAssistant
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `--virtual` when the iPad 2's jailbroken twin cannot be had on this host (its sshd is missing, its
/// script is not to be trusted, or — not as root — the host allows no user namespace): only the iPad 2
/// fails, with the reason and the fix (a device this host should drive and did not is a failure, never
/// a quiet "not available" that keeps CI green); the iPad mini 4 of the same run still deploys to its
/// USB twin and is verified. Not as root, the twin runs, and keeps its app between runs.
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
    @Test func aTwinThatDoesNotStartFailsOnlyItsDevice() async throws {
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
        // This host should drive it (unlike a simulator on Linux): its device fails, and so does the run.
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let results = try Self.report(root)
        let ipad2 = try #require(results["ipad2"], "\(run.stderr)")
        #expect(ipad2.outcome == .failed)
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
            table.contains { $0.hasPrefix("ipad2 ") && $0.contains("failed") && $0.contains("sshd") },
            "\(run.stderr)")
        #expect(table.contains { $0.hasPrefix("mini4 ") && $0.contains("succeeded") }, "\(run.stderr)")
    }

    /// A host that gives a user no user namespace (Debian's kernel.unprivileged_userns_clone=0, Ubuntu
    /// 24.04's AppArmor restriction, user.max_user_namespaces=0): twin.sh's last words (as it says them
    /// when `unshare --user` fails; seen with user.max_user_namespaces exhausted) become the iPad 2's
    /// reason, with the fix.
    @Test func aHostWithoutUserNamespacesSaysTheFix() async throws {
        let ha = try await HomeAssistantServer.shared()
        let root = try await Self.project(ha)
        defer { try? FileManager.default.removeItem(at: root) }
        let script = root.appendingPathComponent("twin-without-userns.sh")
        try """
        #!/bin/sh
        echo "twin.sh: not run as root, the twin needs a user namespace: allow unprivileged user namespaces" >&2
        echo "twin.sh: this host gives this user no user namespace (unshare: unshare failed: No space left on device)" >&2
        exit 1

        """.write(to: script, atomically: true, encoding: .utf8)

        let run = try await HADeployBinary.run(
            ["ipad2", "--virtual", "--no-build", "--report", "report"], in: root,
            environment: ["HADEPLOY_JAILBREAK_TWIN": script.path], timeout: .seconds(240))
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let ipad2 = try #require(try Self.report(root)["ipad2"], "\(run.stderr)")
        #expect(ipad2.outcome == .failed)
        let reason = ipad2.reason ?? ""
        #expect(
            reason.contains("no user namespace (unshare: unshare failed: No space left on device)"),
            "\(reason)")
        #expect(reason.contains("sysctl -w kernel.unprivileged_userns_clone=1"), "\(reason)")
        #expect(reason.contains("sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"), "\(reason)")
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
        #expect(run.status == 1, "a device never touched is no success: \(run.stderr)")
        let ipad2 = try #require(results["ipad2"], "\(run.stderr)")
        #expect(ipad2.outcome == .failed)
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

    /// Runs hadeploy in `root` as a user who is not root: `nobody` (after handing it the project) when
    /// this test runs as root, else this user.
    static func runUnprivileged(_ arguments: [String], in root: URL) async throws -> (
        status: Int32, stderr: String
    ) {
        var variables = HADeployBinary.baseEnvironment(home: root)
        variables["XDG_CACHE_HOME"] = root.appendingPathComponent("cache").path
        let command =
            ["/usr/bin/env", "-i"] + variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            + [try await HADeployBinary.path] + arguments
        var prefix: [String] = []
        if getuid() == 0 {
            let nobody = "65534"
            _ = try await TestHost.runner.checked(
                ProcessCommand("chown", ["-R", "\(nobody):\(nobody)", root.path]), timeout: .seconds(30))
            prefix = ["setpriv", "--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups"]
        }
        let all = prefix + command
        let output = try await TestHost.runner.run(
            ProcessCommand(all[0], Array(all.dropFirst()), workingDirectory: root.path),
            timeout: .seconds(300))
        return (output.status, output.stderr)
    }

    /// Not as root the jailbroken twin runs in a user namespace (before: "not available: the jailbroken
    /// twin needs root"). As the iPad does, it keeps its app between runs (before: every redeploy
    /// reinstalled) and its screenshot is the dashboard the app fetched (before: a test pattern that
    /// shifted between runs, "different (89.5 %)" on every unchanged redeploy): the same build again is
    /// "unchanged, skipped" with a byte-identical screenshot, "same" as its baseline; a card added in
    /// Home Assistant is a different screen. Where the host allows no user namespace, the iPad 2 is
    /// "not available" with the fix.
    @Test func notAsRootTheIPad2TwinDeploysKeepsItsAppAndShowsItsDashboard() async throws {
        let ha = try await HomeAssistantServer.shared()
        let root = try await Self.project(ha)
        defer { try? FileManager.default.removeItem(at: root) }
        let dashboard = "wall-jb-\(UUID().uuidString.prefix(6).lowercased())"
        try await ScreenshotBaselineEndToEndTests.save(
            ha, dashboard, cards: [["type": "markdown", "title": "Welcome"]], create: true)
        defer { Task { try? await EvidenceEndToEndTests.deleteDashboard(ha, dashboard) } }
        let arguments = ["ipad2", "--virtual", "--no-build", "--dashboard", dashboard, "--report", "report"]
        let screenshot = root.appendingPathComponent("report/screenshots/ipad2.png")

        let first = try await Self.runUnprivileged(arguments, in: root)
        let ipad2 = try #require(try Self.report(root)["ipad2"], "\(first.stderr)")
        if ipad2.outcome == .failed, (ipad2.reason ?? "").contains("user namespace") {
            // A host without unprivileged user namespaces: the reason says so, and the fix.
            #expect(ipad2.reason?.contains("sysctl -w kernel.unprivileged_userns_clone=1") == true)
            #expect(ipad2.reason?.contains("kernel.apparmor_restrict_unprivileged_userns=0") == true)
            return
        }
        #expect(first.status == 0, "\(first.stderr)")
        #expect(ipad2.outcome == .succeeded && ipad2.install == .installed, "\(ipad2)\n\(first.stderr)")
        guard case .loaded = ipad2.verification else {
            Issue.record("ipad2 not verified: \(ipad2.verification)\n\(first.stderr)")
            return
        }
        let shot = try Data(contentsOf: screenshot)

        // The same build again: the twin still has it, and shows the same screen.
        let again = try await Self.runUnprivileged(arguments, in: root)
        #expect(again.status == 0, "\(again.stderr)")
        let second = try #require(try Self.report(root)["ipad2"], "\(again.stderr)")
        #expect(second.outcome == .succeeded && second.install == .unchanged, "\(second)\n\(again.stderr)")
        #expect(try Data(contentsOf: screenshot) == shot, "the same dashboard is the same PNG")
        let visual = try #require(second.visual, "\(second)")
        #expect(visual.verdict == .same && visual.matchPercentage == 100, "\(visual)")

        // A card added in Home Assistant: another screen.
        try await ScreenshotBaselineEndToEndTests.save(
            ha, dashboard,
            cards: [["type": "markdown", "title": "Welcome"], ["type": "markdown", "title": "News"]])
        let changed = try await Self.runUnprivileged(arguments, in: root)
        let third = try #require(try Self.report(root)["ipad2"], "\(changed.stderr)")
        #expect(third.install == .unchanged, "\(third)")
        #expect(third.visual.map { $0.verdict != .same } == true, "\(String(describing: third.visual))")
    }
}
