import DeployModel
import Foundation
import HADeployCore
import HADeployDrivers
import HADeployKit
import TestSupport
import Testing

/// `hadeploy plan … --json > plan.json` in the checkout, then `hadeploy deploy --plan plan.json` in
/// another process and another folder — no devices.yaml, no .env, no USBMUXD_SOCKET_ADDRESS, only the
/// token in its environment: the plan alone is enough to run, and the run's events are the plan's steps.
@Suite(.serialized)
struct PlanFileEndToEndTests {
    /// A folder with nothing of the project in it, for the second process.
    static func emptyFolder(_ world: DeployWorld) throws -> URL {
        let folder = world.root.appendingPathComponent("elsewhere-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// `hadeploy deploy --plan FILE --json` in `folder`, with only the token (and the lock folder).
    static func run(_ world: DeployWorld, _ arguments: [String], in folder: URL) async throws
        -> HADeployBinary.Result
    {
        try await HADeployBinary.run(
            ["deploy"] + arguments + ["--json"], in: folder,
            environment: ["XDG_CACHE_HOME": world.root.appendingPathComponent("cache").path],
            secrets: ["HA_TOKEN": world.ha.token],
            timeout: .seconds(180))
    }

    static func finished(_ events: [[String: Any]], device: String, step: String) -> [[String: Any]] {
        events.filter {
            $0["event"] as? String == "step_finished" && $0["device"] as? String == device
                && $0["step"] as? String == step
        }
    }

    @Test func aPlanFileRunsInAnotherProcessWithNothingButTheTokenAndItsEventsAreThePlansSteps()
        async throws
    {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[0], DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        // Planned as a deploy with --report would run (a screenshot step), with --force.
        let made = try await world.deploy([
            "plan", "all", "--no-build", "--artifacts", "artifacts", "--force", "--report", "report",
            "--json",
        ])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(!made.stdout.contains(world.ha.token), "the plan names the token, never holds it")
        #expect(made.stdout.contains("\"env:HA_TOKEN\""))
        let planFile = world.root.appendingPathComponent("plan.json")
        try Data(made.stdout.utf8).write(to: planFile)
        let plan = try DeployPlan.load(Data(made.stdout.utf8), path: "plan.json", project: nil)
        let planned = try PlanEqualsRunTests.plannedSteps(made.stdout).steps
        #expect(planned["ipad2"]?.contains("mount") == true, "iOS 9 over USB: the image mount is a step")
        #expect(planned["mini4"]?.contains("mount") == true, "iOS 15 over USB: the image mount is a step")
        #expect(
            plan.devices.allSatisfy {
                $0.force
                    && Backends.summary(of: .install, for: $0, version: "1.0 (1)").contains("--force")
            })
        guard case .files(let files) = plan.artifacts else {
            Issue.record("the plan names its artifacts: \(plan.artifacts)")
            return
        }
        #expect(files.values.allSatisfy { $0.sha256.count == 64 })

        // No --report here: the planned screenshot is skipped, and says why.
        let folder = try Self.emptyFolder(world)
        for attempt in 1...2 {
            let run = try await Self.run(world, ["--plan", planFile.path, "--unsigned"], in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(!run.stdout.contains(world.ha.token) && !run.stderr.contains(world.ha.token))
            let events = PlanEqualsRunTests.events(run.stdout)
            #expect(PlanEqualsRunTests.executedSteps(events) == planned)
            for device in ["ipad2", "mini4"] {
                let screenshot = Self.finished(events, device: device, step: "screenshot")
                #expect(screenshot.first?["status"] as? String == "skipped")
                #expect((screenshot.first?["detail"] as? String)?.contains("no --report folder") == true)
                // --force: the second run installs again the build the device already has.
                let install = Self.finished(events, device: device, step: "install").last
                #expect(install?["status"] as? String == "ok", "\(device), run \(attempt)")
                #expect(install?["detail"] as? String != "unchanged, skipped", "\(device), run \(attempt)")
                let mount = Self.finished(events, device: device, step: "mount").last
                #expect(mount?["status"] as? String == "ok", "\(device): \(mount ?? [:])")
            }
            let results = events.filter { $0["event"] as? String == "device_finished" }
            #expect(results.count == 2)
        }

        // Without the token the plan names, nothing is touched, and the run says what it needs.
        let bare = try await HADeployBinary.run(
            ["deploy", "--plan", planFile.path, "--unsigned"], in: folder,
            environment: ["XDG_CACHE_HOME": world.root.appendingPathComponent("cache").path])
        #expect(bare.status != 0)
        #expect(bare.stderr.contains("HA_TOKEN"), "\(bare.stderr)")
    }

    @Test func aPlanForAnotherVersionOfTheProjectOrAnotherFormatIsRefused() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let made = try await world.deploy(["plan", "all", "--no-build", "--artifacts", "artifacts", "--json"])
        #expect(made.status == 0, "\(made.stderr)")
        let planFile = world.root.appendingPathComponent("plan.json")
        try Data(made.stdout.utf8).write(to: planFile)

        // devices.yaml changed after planning: the checkout here is another version of the project.
        let yaml = world.root.appendingPathComponent("devices.yaml")
        let original = try Data(contentsOf: yaml)
        try (String(decoding: original, as: UTF8.self) + "# changed after planning\n").write(
            to: yaml, atomically: true, encoding: .utf8)
        let changed = try await world.deploy(["deploy", "--plan", "plan.json", "--unsigned"])
        #expect(changed.status == ExitStatus.config.rawValue, "\(changed.stderr)")
        #expect(changed.stderr.contains("made for another version of this project"), "\(changed.stderr)")
        try original.write(to: yaml)

        // The artifact changed after planning: refused before any device is touched.
        let app = try #require(
            FileManager.default.enumerator(
                atPath: world.root.appendingPathComponent("artifacts/modern").path)?
                .compactMap { $0 as? String }.first { $0.hasSuffix(".app") })
        let marker = world.root.appendingPathComponent("artifacts/modern/\(app)/changed.txt")
        try Data("changed".utf8).write(to: marker)
        let rebuilt = try await world.deploy(["deploy", "--plan", "plan.json", "--unsigned"])
        #expect(rebuilt.status == ExitStatus.config.rawValue, "\(rebuilt.stderr)")
        #expect(rebuilt.stderr.contains("is not the artifact this plan was made with"), "\(rebuilt.stderr)")
        try FileManager.default.removeItem(at: marker)

        // Another plan format.
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any])
        object["format"] = 99
        try JSONSerialization.data(withJSONObject: object).write(to: planFile)
        let future = try await world.deploy(["deploy", "--plan", "plan.json", "--unsigned"])
        #expect(future.status == ExitStatus.config.rawValue, "\(future.stderr)")
        #expect(future.stderr.contains("plan format 99"), "\(future.stderr)")
    }
}
