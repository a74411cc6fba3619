import DeployModel
import Foundation
import HADeployCore
import TestSupport
import Testing

/// A fleet split over three hosts (issue 27): each host runs `hadeploy <its devices> --virtual --json
/// --report DIR` on its own twins; `hadeploy report merge` of the three folders gives the report and
/// the exit code one run over all the devices gives — with a device that fails (its twin's icon cache
/// refresh exits 3), so the exit code matters. Each host's twins are
/// its own; every device here has a virtual model.
@Suite(.serialized)
struct ReportMergeEndToEndTests {
    static let hosts = [["ipad2", "sim"], ["ipad3", "mini4"], ["ipad2-usb"]]

    static func project(_ ha: HomeAssistantServer) async throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-merge-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let yaml = """
            version: 1
            defaults:
              verification_timeout: 30
            flavours:
              legacy: {archs: [armv7, arm64], deployment_target: "9.0", sdk: iphoneos}
              modern: {archs: [arm64], deployment_target: "15.0", sdk: iphoneos}
              simulator: {archs: [arm64], deployment_target: "15.0", sdk: iphonesimulator}
            devices:
              ipad2:
                product_type: iPad2,1
                ios: "9.3.5"
                arch: armv7
                flavour: legacy
                transport: ssh
                udid: ${IPAD2_UDID}
                host: ${IPAD2_HOST}
                dashboard: ""
                ssh: {user: root, legacy_algorithms: true, password_env: IPAD2_SSH_PASSWORD, commands: {refresh: "exit 3"}}
              ipad3:
                product_type: iPad3,1
                ios: "9.3.5"
                arch: armv7
                flavour: legacy
                transport: ssh
                udid: ${IPAD3_UDID}
                host: ${IPAD3_HOST}
                dashboard: ""
                ssh: {user: root, legacy_algorithms: true, password_env: IPAD3_SSH_PASSWORD}
              mini4:
                product_type: iPad5,1
                ios: "15.8"
                arch: arm64
                flavour: modern
                transport: usb
                udid: ${MINI4_UDID}
                dashboard: ""
              ipad2-usb:
                product_type: iPad2,1
                ios: "9.3.5"
                arch: armv7
                flavour: legacy
                transport: usb
                udid: ${IPAD2_USB_UDID}
                dashboard: ""
              sim:
                kind: simulator
                arch: arm64
                ios: "17.5"
                flavour: simulator
                transport: simctl

            """
        try yaml.write(to: root.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
        try "HA_SERVER=\(ha.url)\nHA_TOKEN=\(ha.token)\n".write(
            to: root.appendingPathComponent(".env"), atomically: true, encoding: .utf8)
        try ".env\n.hadeploy/\nhost-*/\nall/\nmerged*/\n".write(
            to: root.appendingPathComponent(".gitignore"), atomically: true, encoding: .utf8)
        try await GitRepository.commitAll(at: root, tag: "v1.0.0")
        return root
    }

    static func summary(_ folder: URL) throws -> DeployReport {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(
            DeployReport.self, from: Data(contentsOf: folder.appendingPathComponent("summary.json")))
    }

    /// `hadeploy DEVICES --virtual --no-build --json --report FOLDER`, its JSON Lines kept in
    /// FOLDER/events.jsonl as a CI job would upload them.
    static func deploy(_ devices: [String], folder: String, in root: URL) async throws
        -> HADeployBinary.Result
    {
        let run = try await HADeployBinary.run(
            // Each run its own twins (--state), as each host of a CI matrix has its own devices: the
            // jailbroken twin keeps its installed app between runs, as the iPad does.
            devices + [
                "--virtual", "--no-build", "--json", "--report", folder, "--state", ".hadeploy/\(folder)",
            ],
            in: root,
            timeout: .seconds(300))
        try run.stdout.write(
            to: root.appendingPathComponent(folder).appendingPathComponent("events.jsonl"), atomically: true,
            encoding: .utf8)
        return run
    }

    /// What a reader of the report compares: each device's outcome and failed step, and the tallies.
    static func outcomes(_ report: DeployReport) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: report.results.map {
                ($0.id, "\($0.outcome.rawValue)\($0.failedStep.map { " in \($0)" } ?? "")")
            })
    }

    static func junitCounts(_ folder: URL) throws -> String {
        let junit = try String(contentsOf: folder.appendingPathComponent("junit.xml"), encoding: .utf8)
        // The <testsuite> line's tests/failures/skipped (its name and id differ from run to run).
        let suite = try #require(junit.split(separator: "\n").first { $0.contains("<testsuite ") })
        return ["tests", "failures", "skipped"].compactMap { key in
            suite.range(of: "\(key)=\"[0-9]+\"", options: .regularExpression).map { String(suite[$0]) }
        }.joined(separator: " ")
    }

    static func tally(_ folder: URL) throws -> String {
        let html = try String(contentsOf: folder.appendingPathComponent("index.html"), encoding: .utf8)
        let line = try #require(html.split(separator: "\n").first { $0.contains("device(s): ") })
        return String(line[line.range(of: "device(s): ")!.lowerBound...])
    }

    @Test func threeHostsMergedGiveTheReportAndExitCodeOfOneRunOverAllTheirDevices() async throws {
        let ha = try await HomeAssistantServer.shared()
        let root = try await Self.project(ha)
        defer { try? FileManager.default.removeItem(at: root) }

        var statuses: [Int32] = []
        for (index, devices) in Self.hosts.enumerated() {
            let run = try await Self.deploy(devices, folder: "host-\(index + 1)", in: root)
            statuses.append(run.status)
            #expect(run.stdout.contains("\"run_finished\""), "\(run.stderr)")
        }
        // Only the first host has the failing device.
        #expect(statuses == [1, 0, 0], "\(statuses)")
        let single = try await Self.deploy(Self.hosts.flatMap { $0 }, folder: "all", in: root)
        #expect(single.status == 1, "\(single.stderr)")

        let merge = try await HADeployBinary.run(
            ["report", "merge", "host-1", "host-2", "host-3", "--report", "merged"], in: root)
        #expect(merge.status == single.status, "\(merge.stdout)\(merge.stderr)")
        let all = root.appendingPathComponent("all")
        let merged = root.appendingPathComponent("merged")
        let one = try Self.summary(all)
        let joined = try Self.summary(merged)
        #expect(Self.outcomes(joined) == Self.outcomes(one), "\(Self.outcomes(joined)) \(Self.outcomes(one))")
        #expect(Self.outcomes(one)["ipad2"] == "failed in install", "\(Self.outcomes(one))")
        #expect(Self.outcomes(one)["sim"] == "not available")
        #expect(
            ["ipad3", "mini4", "ipad2-usb"].allSatisfy { Self.outcomes(one)[$0] == "succeeded" },
            "\(Self.outcomes(one))")
        #expect(joined.exitCode == one.exitCode && one.exitCode == 1)
        #expect(joined.version == one.version)
        #expect(try Self.junitCounts(merged) == Self.junitCounts(all))
        let tally = try Self.tally(merged)
        #expect(try tally == Self.tally(all), "\(tally)")
        // The contact sheet shows every screenshot the hosts took, from the merged folder.
        let shots = joined.results.compactMap(\.screenshot)
        #expect(shots.count == one.results.compactMap(\.screenshot).count && !shots.isEmpty)
        for shot in shots {
            #expect(
                FileManager.default.fileExists(atPath: merged.appendingPathComponent(shot).path), "\(shot)")
        }
        // The summary table lists every device once.
        for id in Self.hosts.flatMap({ $0 }) {
            #expect(merge.stdout.split(separator: "\n").filter { $0.hasPrefix("\(id) ") }.count == 1, "\(id)")
        }

        // The JSON Lines alone (no report folder) merge to the same; without the failing host, 0.
        let lines = try await HADeployBinary.run(
            ["report", "merge", "host-2/events.jsonl", "host-3/events.jsonl", "--json"], in: root)
        #expect(lines.status == 0, "\(lines.stderr)")
        let finished = try #require(lines.stdout.split(separator: "\n").last)
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(finished.utf8)) as? [String: Any])
        #expect(report["event"] as? String == "run_finished")
        let results = try #require((report["report"] as? [String: Any])?["results"] as? [[String: Any]])
        #expect(results.compactMap { $0["id"] as? String }.sorted() == ["ipad2-usb", "ipad3", "mini4"])
    }

    @Test func aDeviceInTwoInputsADifferentVersionAndABrokenSummaryAreRefusedNamingTheFile() async throws {
        let ha = try await HomeAssistantServer.shared()
        let root = try await Self.project(ha)
        defer { try? FileManager.default.removeItem(at: root) }
        let run = try await Self.deploy(["mini4"], folder: "host-1", in: root)
        #expect(run.status == 0, "\(run.stderr)")
        let manager = FileManager.default
        try manager.copyItem(
            at: root.appendingPathComponent("host-1"), to: root.appendingPathComponent("host-2"))

        let twice = try await HADeployBinary.run(
            ["report", "merge", "host-1", "host-2", "--report", "merged"], in: root)
        #expect(twice.status == 64, "\(twice.stderr)")
        #expect(twice.stderr.contains("device mini4 is in both host-1 and host-2"), "\(twice.stderr)")
        #expect(!manager.fileExists(atPath: root.appendingPathComponent("merged/summary.json").path))

        // Another commit's run (its summary says another version), a cut-off summary, a folder the
        // job never filled: all named at once.
        let other = root.appendingPathComponent("host-2/summary.json")
        let text = try String(contentsOf: other, encoding: .utf8)
        let version = try Self.summary(root.appendingPathComponent("host-1")).version
        try text.replacingOccurrences(of: "\"\(version)\"", with: "\"9.9.9 (99)\"").replacingOccurrences(
            of: "\"mini4\"", with: "\"ipad2-usb\""
        ).write(to: other, atomically: true, encoding: .utf8)
        try manager.copyItem(
            at: root.appendingPathComponent("host-1"), to: root.appendingPathComponent("host-3"))
        try String(text.prefix(text.count / 2)).write(
            to: root.appendingPathComponent("host-3/summary.json"), atomically: true, encoding: .utf8)
        try manager.createDirectory(
            at: root.appendingPathComponent("host-4"), withIntermediateDirectories: true)

        let mixed = try await HADeployBinary.run(["report", "merge", "host-1", "host-2"], in: root)
        #expect(mixed.status == 64, "\(mixed.stderr)")
        #expect(
            mixed.stderr.contains("host-2 deployed version 9.9.9 (99), host-1 version \(version)"),
            "\(mixed.stderr)")
        let broken = try await HADeployBinary.run(
            ["report", "merge", "host-1", "host-3", "host-4", "host-5"], in: root)
        #expect(broken.status == 64, "\(broken.stderr)")
        #expect(broken.stderr.contains("host-3/summary.json: not a hadeploy summary ("), "\(broken.stderr)")
        #expect(broken.stderr.contains("host-4: no summary.json and no *.jsonl"), "\(broken.stderr)")
        #expect(broken.stderr.contains("host-5: no such file or folder"), "\(broken.stderr)")
        #expect(broken.stdout.isEmpty, "\(broken.stdout)")
    }
}
