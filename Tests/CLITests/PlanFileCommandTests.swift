import Foundation
import HADeployCore
import TestSupport
import Testing

/// `hadeploy deploy --plan FILE` holds the file to what a plan file may do (the Kit's
/// PlanFileLoaderTests go through each rule; these run the binary).
struct PlanFileCommandTests {
    /// `plan iphone --json` as on Linux (the iPhone is driven through pymobiledevice3 there), made a plan
    /// that would run from a file: nothing built, nothing to install.
    static func linuxPlan(_ project: Project, environment: [String: String] = [:]) async throws -> [String:
        Any]
    {
        let made = try await HADeployBinary.run(
            ["plan", "--as-host", "linux", "iphone", "--json"], in: project.url, environment: environment)
        #expect(made.status == 0, "\(made.stderr)")
        var plan = try #require(
            try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any])
        plan["builds"] = (plan["builds"] as? [[String: Any]] ?? []).map { build in
            var build = build
            build["commands"] = [Any]()
            build["enabled"] = false
            return build
        }
        plan["artifacts"] = ["nothing": [String: Any]()]
        return plan
    }

    /// The attack: a plan naming a script as pymobiledevice3. Refused before anything runs:
    /// the script's marker file is never written.
    @Test func aPlanNamingAScriptAsPymobiledevice3IsRefusedAndTheScriptNeverRuns() async throws {
        let project = try await Project()
        let marker = project.url.appendingPathComponent("ran-evil")
        let script = project.url.appendingPathComponent("evil.sh")
        try Data("#!/bin/sh\ntouch '\(marker.path)'\n".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)

        var plan = try await Self.linuxPlan(project)
        var devices = try #require(plan["devices"] as? [[String: Any]])
        var backend = try #require(devices[0]["backend"] as? [String: Any])
        #expect(backend["kind"] as? String == "pymobiledevice3")
        var settings = try #require(backend["settings"] as? [String: Any])
        #expect(settings["executable"] as? String == "pymobiledevice3", "the planner writes a name")
        settings["executable"] = script.path
        backend["settings"] = settings
        devices[0]["backend"] = backend
        plan["devices"] = devices
        try JSONSerialization.data(withJSONObject: plan).write(
            to: project.url.appendingPathComponent("plan.json"))

        let run = try await project.run(
            "deploy", "--plan", "plan.json", "--unsigned", environment: ["HA_TOKEN": "t0ken"])
        #expect(run.status == ExitStatus.config.rawValue, "\(run.stderr)")
        #expect(
            run.stderr.contains("devices[0].backend.settings.executable"), "\(run.stderr)")
        #expect(run.stderr.contains("'\(script.path)' is not a tool a plan file may name"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker.path), "the plan's script ran")
    }

    @Test func planJsonSignsWithTheKeyAndDeployRefusesAnotherKeyWithoutShowingEither() async throws {
        let project = try await Project()
        let key = "plan-key-\(UUID().uuidString)"
        let made = try await project.run(
            "plan", "--as-host", "linux", "iphone", "--json", environment: ["HADEPLOY_PLAN_KEY": key])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("\"signature\" : \"hmac-sha256:"), "\(made.stdout)")
        #expect(!made.stdout.contains(key) && !made.stderr.contains(key))
        try Data(made.stdout.utf8).write(to: project.url.appendingPathComponent("plan.json"))

        let other = "other-key-\(UUID().uuidString)"
        let run = try await project.run(
            "deploy", "--plan", "plan.json", environment: ["HADEPLOY_PLAN_KEY": other])
        #expect(run.status == ExitStatus.config.rawValue, "\(run.stderr)")
        #expect(run.stderr.contains("its signature does not match HADEPLOY_PLAN_KEY"), "\(run.stderr)")
        #expect(!run.stderr.contains(other) && !run.stdout.contains(other))
        #expect(!run.stderr.contains(key) && !run.stdout.contains(key))

        // Unsigned, with the key set: refused.
        let unsigned = try await project.run("plan", "--as-host", "linux", "iphone", "--json")
        try Data(unsigned.stdout.utf8).write(to: project.url.appendingPathComponent("plan.json"))
        let bare = try await project.run(
            "deploy", "--plan", "plan.json", environment: ["HADEPLOY_PLAN_KEY": key])
        #expect(bare.status == ExitStatus.config.rawValue, "\(bare.stderr)")
        #expect(bare.stderr.contains("not signed, and HADEPLOY_PLAN_KEY is set"), "\(bare.stderr)")
    }

    /// An unsigned plan decides where the token goes (its `server`): without the key and without
    /// --unsigned it never runs; --unsigned alone, without a plan, is a usage error.
    @Test func anUnsignedPlanRunsOnlyWithUnsigned() async throws {
        let project = try await Project()
        let made = try await project.run("plan", "--as-host", "linux", "iphone", "--json")
        #expect(made.status == 0, "\(made.stderr)")
        try Data(made.stdout.utf8).write(to: project.url.appendingPathComponent("plan.json"))
        let run = try await project.run(
            "deploy", "--plan", "plan.json", environment: ["HA_TOKEN": "someone-elses-plan-token"])
        #expect(run.status == ExitStatus.config.rawValue, "\(run.stderr)")
        #expect(run.stderr.contains("not signed"), "\(run.stderr)")
        #expect(run.stderr.contains("--unsigned"), "\(run.stderr)")
        #expect(!run.stderr.contains("someone-elses-plan-token"))
        let misuse = try await project.run("deploy", "iphone", "--unsigned")
        #expect(misuse.status == 64, "\(misuse.stderr)")
    }
}
