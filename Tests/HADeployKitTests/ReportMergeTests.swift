import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployReporting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `report merge` on host folders whose summary.json came from another machine: it copies only the
/// files hadeploy writes, from inside each host's folder into the merged one, and every other path
/// (`../`, a link, a FIFO, a 5 GB file, a remote URL) is refused by name while the rest is merged.
struct ReportMergeTests {
    let root: URL
    var host: URL { root.appendingPathComponent("host-1") }
    var merged: URL { root.appendingPathComponent("merged") }
    /// A folder of the user's that no merge may touch.
    var victim: URL { root.appendingPathComponent("victim") }

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-merge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("victim"), withIntermediateDirectories: true)
        try Data("ssh-ed25519 AAAA the user's key\n".utf8).write(
            to: root.appendingPathComponent("victim/authorized_keys"))
        try Data("the user's picture".utf8).write(to: root.appendingPathComponent("victim/a.png"))
    }

    func place(_ text: String, _ relative: String, in folder: URL? = nil) throws {
        let url = (folder ?? host).appendingPathComponent(relative)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    static func result(
        _ id: String, screenshot: String? = nil, crashReports: [String] = [], visual: VisualCheck? = nil
    ) -> DeviceResult {
        var result = DeviceResult(
            id: id, name: id, ios: "15.8", transport: "usb", version: "1.0 (1)", outcome: .succeeded,
            reason: nil, failedStep: nil, install: .installed, verification: .loaded(seconds: 1), steps: [],
            screenshot: screenshot, crashReports: crashReports, seconds: 1)
        result.visual = visual
        return result
    }

    func input(_ results: [DeviceResult], folder: URL? = nil, name: String = "host-1") -> ReportMergeInput {
        ReportMergeInput(
            name: name,
            report: DeployReport(
                deployID: "d", version: "1.0 (1)", startedAt: Date(), finishedAt: Date(), verify: true,
                interrupted: false, results: results, exitCode: 0),
            folder: folder ?? host)
    }

    func merge(_ inputs: [ReportMergeInput], into target: URL? = nil) throws -> (
        report: DeployReport, refused: [String]
    ) {
        try ReportMerger.write(
            try ReportMerger.merge(inputs), inputs: inputs, to: target ?? merged,
            fileSystem: TestHost.fileSystem
        )
    }

    func victimIsUntouched() throws {
        #expect(
            try String(contentsOf: victim.appendingPathComponent("authorized_keys"), encoding: .utf8)
                == "ssh-ed25519 AAAA the user's key\n")
        #expect(
            try String(contentsOf: victim.appendingPathComponent("a.png"), encoding: .utf8)
                == "the user's picture")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: victim.path).sorted() == [
                "a.png", "authorized_keys",
            ])
    }

    @Test func pathsOutsideTheFoldersAreRefusedAndTheRestIsMerged() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try place("good picture", "screenshots/b.png")
        try place("a crash", "crashes/b/App-2024-06-11-101502.ips")
        let results = [
            // `../` from the merged folder is the victim folder: once removed whole, then written.
            Self.result(
                "a", screenshot: "../victim",
                crashReports: ["/ci/run/crashes/a/../../../victim/authorized_keys"]),
            Self.result(
                "b", screenshot: "screenshots/b.png",
                crashReports: ["/ci/host-1/crashes/b/App-2024-06-11-101502.ips"]),
        ]
        let (report, refused) = try merge([input(results)])
        try victimIsUntouched()
        #expect(refused.count == 2, "\(refused)")
        #expect(
            refused.contains {
                $0.contains("device a") && $0.contains("'../victim' is not a name hadeploy writes")
            })
        #expect(refused.contains { $0.contains("device a") && $0.contains("crash log") })
        #expect(report.results[0].screenshot == nil)
        // The other device's files are merged all the same.
        #expect(report.results[1].screenshot == "screenshots/b.png")
        #expect(
            try String(contentsOf: merged.appendingPathComponent("screenshots/b.png"), encoding: .utf8)
                == "good picture")
        #expect(
            report.results[1].crashReports == [
                merged.appendingPathComponent("crashes/b/App-2024-06-11-101502.ips").path
            ])
        #expect(FileManager.default.fileExists(atPath: report.results[1].crashReports[0]))
        // The merge says so, and fails: its report is not all the hosts gave.
        #expect(report.exitCode == 1 && report.reportProblem?.contains("refused") == true)
        let summary = try String(contentsOf: merged.appendingPathComponent("summary.json"), encoding: .utf8)
        #expect(summary.contains("refused"))
    }

    @Test func aSymlinkInAHostFolderOrInTheMergedFolderIsNotFollowed() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: host, withIntermediateDirectories: true)
        // host-1/screenshots is a link to the victim folder: its a.png is not the host's to give.
        try FileManager.default.createSymbolicLink(
            at: host.appendingPathComponent("screenshots"), withDestinationURL: victim)
        // host-1/crashes/b/App.ips is a link to the user's authorized_keys.
        try FileManager.default.createDirectory(
            at: host.appendingPathComponent("crashes/b"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: host.appendingPathComponent("crashes/b/App-1.ips"),
            withDestinationURL: victim.appendingPathComponent("authorized_keys"))
        // The merged folder already holds a link to the victim folder where c's crash logs go.
        try place("the host's key", "crashes/c/App-2.ips")
        try FileManager.default.createDirectory(
            at: merged.appendingPathComponent("crashes"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: merged.appendingPathComponent("crashes/c"), withDestinationURL: victim)
        let (report, refused) = try merge([
            input([
                Self.result("a", screenshot: "screenshots/a.png"),
                Self.result("b", crashReports: ["/x/crashes/b/App-1.ips"]),
                Self.result("c", crashReports: ["/x/crashes/c/App-2.ips"]),
            ])
        ])
        try victimIsUntouched()
        #expect(refused.count == 3, "\(refused)")
        #expect(refused.contains { $0.contains("device a") && $0.contains("not a folder") }, "\(refused)")
        #expect(refused.contains { $0.contains("device b") && $0.contains("symbolic link") }, "\(refused)")
        #expect(refused.contains { $0.contains("device c") && $0.contains("not a folder") }, "\(refused)")
        #expect(report.results[0].screenshot == nil)
        #expect(
            !FileManager.default.fileExists(atPath: merged.appendingPathComponent("screenshots/a.png").path))
        // A crash log stays listed (the device did crash), as the host named it.
        #expect(report.results[1].crashReports == ["/x/crashes/b/App-1.ips"])
    }

    @Test func aFIFOAHugeFileAndARemoteURLAreRefusedWithoutHangingOrCopying() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(
            at: host.appendingPathComponent("screenshots"), withIntermediateDirectories: true)
        #expect(mkfifo(host.appendingPathComponent("screenshots/a.png").path, 0o600) == 0)
        // 5 GB of nothing: a sparse file, no disk used.
        let huge = host.appendingPathComponent("screenshots/b.png")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: nil))
        let handle = try FileHandle(forWritingTo: huge)
        try handle.truncate(atOffset: 5 << 30)
        try handle.close()
        try place("new", "screenshots/c.png")
        let visual = VisualCheck(
            dashboard: "default", verdict: .different, matchPercentage: 50,
            baseline: "https://tracker.example/pixel.png", diff: "screenshots/diff/c.png")
        let (report, refused) = try merge([
            input([
                Self.result("a", screenshot: "screenshots/a.png"),
                Self.result("b", screenshot: "screenshots/b.png"),
                Self.result("c", screenshot: "screenshots/c.png", visual: visual),
            ])
        ])
        #expect(
            refused.contains { $0.contains("device a") && $0.contains("not a regular file (it is a FIFO)") },
            "\(refused)")
        #expect(
            refused.contains { $0.contains("device b") && $0.contains("more than the 128 MB") }, "\(refused)")
        #expect(refused.contains { $0.contains("device c") && $0.contains("tracker.example") }, "\(refused)")
        #expect(report.results.map(\.screenshot) == [nil, nil, "screenshots/c.png"])
        // The diff was not on the host: dropped rather than shown broken; the remote baseline dropped.
        #expect(report.results[2].visual?.baseline == nil && report.results[2].visual?.diff == nil)
        let html = try String(contentsOf: merged.appendingPathComponent("index.html"), encoding: .utf8)
        #expect(!html.contains("tracker.example"))
        #expect(
            !FileManager.default.fileExists(atPath: merged.appendingPathComponent("screenshots/b.png").path))
    }

    @Test func aSummaryThatIsAFIFOIsRefusedByNameWithoutWaiting() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: host, withIntermediateDirectories: true)
        #expect(mkfifo(host.appendingPathComponent("summary.json").path, 0o600) == 0)
        #expect {
            try ReportMergeInput.load(
                "host-1", base: URL(fileURLWithPath: root.path, isDirectory: true),
                fileSystem: TestHost.fileSystem)
        } throws: { error in
            "\(error)".contains("host-1/summary.json: not a regular file")
        }
    }

    @Test func mergingIntoAnInputThroughALinkLeavesItsFilesInPlace() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try place("the picture", "screenshots/a.png")
        try place("a crash", "crashes/a/App-1.ips")
        let alias = root.appendingPathComponent("alias")
        try FileManager.default.createSymbolicLink(at: alias, withDestinationURL: host)
        let (report, refused) = try merge(
            [
                input([
                    Self.result(
                        "a", screenshot: "screenshots/a.png", crashReports: ["/x/crashes/a/App-1.ips"])
                ])
            ],
            into: alias)
        #expect(refused.isEmpty, "\(refused)")
        #expect(report.results[0].screenshot == "screenshots/a.png")
        #expect(
            try String(contentsOf: host.appendingPathComponent("screenshots/a.png"), encoding: .utf8)
                == "the picture")
        #expect(
            try String(contentsOf: host.appendingPathComponent("crashes/a/App-1.ips"), encoding: .utf8)
                == "a crash")
    }
}
