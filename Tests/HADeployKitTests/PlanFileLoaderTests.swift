import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import HADeployKit
import TestSupport
import Testing

@testable import Versioning

/// What a plan file may do (`PlanFileLoader`): tools by name, secrets from an allow-list, devices.yaml's
/// bounds, the run's own folders, and the optional HMAC (`HADEPLOY_PLAN_KEY`).
struct PlanFileLoaderTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every device of the committed devices.yaml but the -usb routes, planned as `plan all jailbroken sims
    /// --no-build --json` would on `host`,
    /// its state folder where the planning job had it.
    static func plan(host: HostPlatform = .linux, build: Bool = false) throws -> DeployPlan {
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: root.appendingPathComponent("devices.yaml"), displayName: "devices.yaml")
        var options = DeployOptions(targets: ["all", "jailbroken", "sims"], build: build)
        options.artifacts = .nothing
        return try DeployPlanner(
            matrix: matrix, variables: variables, topology: Topology(host: host),
            paths: HostPaths(stateDirectory: "/ci/planner/checkout/.hadeploy/virtual", home: "/home/planner")
        ).plan(options: options, version: version, deployID: "d-1")
    }

    static func matrix() throws -> DeviceMatrix {
        try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: root.appendingPathComponent("devices.yaml"), displayName: "devices.yaml")
    }
    static let version = GitVersion(
        marketingVersion: "1.4.0", buildNumber: 212, tag: "v1.4.0", commitsSinceTag: 0, dirty: false,
        shallow: false)
    /// The App Store Connect key values sign the device builds: secrets in the build's command line.
    static let variables = [
        "HA_SERVER": "http://ha.local:8123", "HA_TOKEN": "t0ken", "IPAD2_SSH_PASS": "alpine",
        "IPAD2_HOST": "10.0.0.2", "IPAD2_UDID": "00008-ipad2", "MINI4_UDID": "00008-mini4",
        "ROSETTASIM_CTL": "/opt/rosettasim/rosettasim-ctl", "ASC_KEY_PATH": "/keys/AuthKey.p8",
        "ASC_KEY_ID": "KEY123SECRET", "ASC_ISSUER_ID": "issuer-0001",
    ]

    static let runState = URL(fileURLWithPath: "/ci/runner/work/.hadeploy/virtual")

    static func loader(_ environment: [String: String] = [:]) -> PlanFileLoader {
        // The working folder has no `.venv-pmd3`: pymobiledevice3 resolves to PYMOBILEDEVICE3 or PATH.
        let fileSystem = FakeFileSystem()
        return PlanFileLoader(
            environment: environment, workingDirectory: fileSystem.currentDirectory,
            stateDirectory: runState, home: "/home/runner", fileSystem: fileSystem)
    }

    static func load(_ plan: DeployPlan, environment: [String: String] = [:]) throws -> PlanFileLoader.Loaded
    {
        try loader(environment).load(Data(try PlanPrinter.json(plan).utf8), path: "plan.json", project: nil)
    }

    static func load(json: String, environment: [String: String]) throws -> PlanFileLoader.Loaded {
        try loader(environment).load(Data(json.utf8), path: "plan.json", project: nil)
    }

    /// The refusal's words, or "" when the plan was accepted.
    static func refusal(_ body: () throws -> Void) -> String {
        do {
            try body()
            return ""
        } catch {
            #expect(error is PlanFileError, "\(error)")
            #expect((error as? PlanFileError)?.exitStatus == .config)
            return "\(error)"
        }
    }

    struct NoSuchDevice: Error {}

    /// Format 4 keeps a device's kiosk and dashboard once, in its launch settings: a format-3 plan
    /// (with them twice) is refused with the way out, and the plan written has them only there.
    @Test func aDevicesLaunchFactsAreKeptOnceAndAnOlderPlanIsRefused() throws {
        let plan = try Self.plan()
        let json = try PlanPrinter.json(plan)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["format"] as? Int == 4)
        let devices = try #require(object["devices"] as? [[String: Any]])
        let ipad2 = try #require(devices.first { $0["id"] as? String == "ipad2" })
        #expect(ipad2["kiosk"] == nil && ipad2["dashboard"] == nil, "\(ipad2.keys.sorted())")
        let launch = try #require(ipad2["launch"] as? [String: Any])
        #expect(launch["kiosk"] as? Bool == true && launch["dashboard"] as? String == "dashboard-office")
        #expect(try Self.load(plan).plan.devices.first { $0.id == "ipad2" }?.kiosk == true)

        var older = object
        older["format"] = 3
        let data = try JSONSerialization.data(withJSONObject: older)
        let refused = Self.refusal {
            _ = try Self.load(json: String(decoding: data, as: UTF8.self), environment: [:])
        }
        #expect(
            refused.contains("plan format 3 — this hadeploy reads format 4: make the plan again"),
            "\(refused)")
    }

    static func index(_ plan: DeployPlan, where test: (DevicePlan) -> Bool) throws -> Int {
        guard let index = plan.devices.firstIndex(where: test) else { throw NoSuchDevice() }
        return index
    }

    /// Changes device `index`'s configuration as a hand-edited plan file would.
    static func edit<B: Backend>(
        _ plan: inout DeployPlan, _ index: Int, _ backend: B.Type, _ change: (inout B.Configuration) -> Void
    ) throws {
        var configuration = try #require(try Backends.configuration(backend, of: plan.devices[index]))
        change(&configuration)
        plan.devices[index].backend.settings = try PlanValue(encoding: configuration)
    }

    @Test func whatThePlannerWritesRunsFromAFileWithTheRunsOwnFolders() throws {
        for host in [HostPlatform.linux, .macOS] {
            let plan = try Self.plan(host: host)
            let problems = plan.fileProblems(backends: Backends()) { $0 }
            #expect(problems.isEmpty, "\(host): \(problems)")
            let loaded = try Self.load(plan)
            #expect(loaded.notes.isEmpty)
            #expect(loaded.plan.stateDirectory == Self.runState.path)
            var kinds = Set<String>()
            for device in loaded.plan.devices {
                kinds.insert(device.backend.kind)
                if let usb = try Backends.configuration(USBBackend.self, of: device) {
                    #expect(usb.installRecords == Self.runState.path + "/install-records")
                }
                if let ssh = try Backends.configuration(SSHBackend.self, of: device) {
                    #expect(ssh.workDirectory == Self.runState.path + "/ssh")
                    #expect(
                        ssh.fallback.map { $0.installRecords == Self.runState.path + "/install-records" }
                            ?? true)
                }
                if let tunnel = try Backends.configuration(PyMobileDevice3Backend.self, of: device) {
                    #expect(tunnel.executable == "pymobiledevice3", "a name, resolved by the run")
                    #expect(tunnel.scratchDirectory == Self.runState.path + "/pymobiledevice3")
                    #expect(tunnel.usb.installRecords == Self.runState.path + "/install-records")
                }
                for simulator in [
                    try Backends.configuration(SimctlBackend.self, of: device),
                    try Backends.configuration(RosettaSimBackend.self, of: device),
                ].compactMap({ $0 }) {
                    #expect(simulator.home == "/home/runner")
                    #expect(simulator.scratchDirectory.hasPrefix(Self.runState.path + "/"))
                    #expect(simulator.tool == nil || simulator.tool == "rosettasim-ctl")
                }
                if let devicectl = try Backends.configuration(DevicectlBackend.self, of: device) {
                    #expect(devicectl.scratchDirectory == Self.runState.path + "/devicectl")
                }
                if let mac = try Backends.configuration(MacBackend.self, of: device) {
                    #expect(mac.home == "/home/runner")
                }
            }
            #expect(kinds.count >= 3, "\(host): \(kinds)")
        }
    }

    /// The attack of the issue: a plan naming a script as pymobiledevice3. Refused at load, before any
    /// device: nothing of the plan runs (the CLI test checks the script's marker file).
    @Test func aPlanNamingAPathAsPymobiledevice3IsRefusedUnlessItIsWhatThisHostResolves() throws {
        var plan = try Self.plan()
        let device = try Self.index(plan) { $0.backend.kind == PyMobileDevice3Backend.kind }
        try Self.edit(&plan, device, PyMobileDevice3Backend.self) { $0.executable = "/tmp/evil.sh" }
        let refused = Self.refusal { _ = try Self.load(plan) }
        #expect(refused.contains("devices[\(device)].backend.settings.executable"), "\(refused)")
        #expect(refused.contains("'/tmp/evil.sh' is not a tool a plan file may name"), "\(refused)")

        // The same path is what this host resolves (PYMOBILEDEVICE3 of the run's environment): accepted.
        try Self.edit(&plan, device, PyMobileDevice3Backend.self) {
            $0.executable = "/opt/pmd3/bin/pymobiledevice3"
        }
        #expect(Self.refusal { _ = try Self.load(plan) }.contains("is not a tool a plan file may name"))
        _ = try Self.load(plan, environment: ["PYMOBILEDEVICE3": "/opt/pmd3/bin/pymobiledevice3"])

        // rosettasim-ctl alike (macOS plans).
        var mac = try Self.plan(host: .macOS)
        let sim = try Self.index(mac) { $0.backend.kind == RosettaSimBackend.kind }
        try Self.edit(&mac, sim, RosettaSimBackend.self) {
            $0.tool = "/Users/someone/Downloads/rosettasim-ctl"
        }
        #expect(
            Self.refusal { _ = try Self.load(mac) }.contains(
                "devices[\(sim)].backend.settings.tool: '/Users/someone/Downloads/rosettasim-ctl'")
        )
        // An Xcode that is not one: xcrun would run the tools of that folder.
        try Self.edit(&mac, sim, RosettaSimBackend.self) {
            $0.tool = "rosettasim-ctl"
            $0.developerDir = "/tmp/fake/Contents/Developer"
        }
        #expect(
            Self.refusal { _ = try Self.load(mac) }.contains(
                "devices[\(sim)].backend.settings.developerDir: '/tmp/fake/Contents/Developer'"))
        // A backend this hadeploy does not have.
        mac.devices[sim].backend.kind = "adb"
        #expect(
            Self.refusal { _ = try Self.load(mac) }.contains(
                "devices[\(sim)].backend.settings: no backend named 'adb'"))
    }

    /// A plan that builds runs only in the checkout it was planned from, whose planner writes the same
    /// build commands; the run then executes that checkout's commands, secrets included (the file shows
    /// them as `***`). Before: any plan that built was refused from a file.
    @Test func aPlanThatBuildsRunsOnlyWithTheCommandsThisCheckoutPlans() throws {
        var plan = try Self.plan(host: .macOS, build: true)
        plan.project = "fingerprint-1"
        let planned = BuildCommandBuilder.resolved(variables: Self.variables, version: Self.version)
        let expected = Dictionary(
            try Self.matrix().flavours.map { ($0.name, planned.commands($0)) },
            uniquingKeysWith: { a, _ in a })
        let building = try #require(plan.builds.firstIndex { !$0.commands.isEmpty })
        let file = Data(try PlanPrinter.json(plan).utf8)
        #expect(
            !String(decoding: file, as: UTF8.self).contains("KEY123SECRET"), "the file shows secrets as ***")

        // No checkout here: refused, saying where it runs.
        let away = Self.refusal {
            _ = try Self.loader().load(file, path: "plan.json", project: nil, buildCommands: expected)
        }
        #expect(away.contains("builds[\(building)].commands: this plan builds"), "\(away)")
        #expect(away.contains("only in the checkout it was planned from"), "\(away)")

        // The checkout it was planned from: accepted, and what runs is the checkout's, with its secrets.
        let loaded = try Self.loader().load(
            file, path: "plan.json", project: "fingerprint-1", buildCommands: expected)
        for build in loaded.plan.builds where !build.commands.isEmpty {
            #expect(build.commands == expected[build.flavour], "\(build.flavour)")
        }
        #expect(
            loaded.plan.builds.contains { $0.commands.contains { $0.arguments.contains("KEY123SECRET") } },
            "the builds that sign (the Mac's, as the app's build.sh mac) use the App Store Connect key")

        // A command this checkout would not run: refused at its JSON path.
        var evil = plan
        evil.builds[building].commands[0] = ProcessCommand("/tmp/evil.sh", ["archive"])
        let refused = Self.refusal {
            _ = try Self.loader().load(
                Data(try PlanPrinter.json(evil).utf8), path: "plan.json", project: "fingerprint-1",
                buildCommands: expected)
        }
        #expect(
            refused.contains("builds[\(building)].commands[0]: not the build this checkout plans"),
            "\(refused)")
    }

    @Test func secretsOnlyFromTheKeysAPlanNeeds() throws {
        var plan = try Self.plan()
        let stolen = SecretReference(environment: "CI_DEPLOY_KEY")
        plan.accessToken = stolen
        let launched = try Self.index(plan) {
            if case .homeAssistant = $0.launch.credentials { return true } else { return false }
        }
        guard case .homeAssistant(let server, _) = plan.devices[launched].launch.credentials else { return }
        plan.devices[launched].launch.credentials = .homeAssistant(server: server, token: stolen)
        let jailbroken = try Self.index(plan) { $0.backend.kind == SSHBackend.kind }
        try Self.edit(&plan, jailbroken, SSHBackend.self) {
            $0.login = .password(SecretReference(environment: "AWS_SECRET_ACCESS_KEY"))
        }

        let refused = Self.refusal { _ = try Self.load(plan) }
        #expect(
            refused.contains("accessToken: the token may only be env:HA_TOKEN; CI_DEPLOY_KEY"), "\(refused)")
        #expect(refused.contains("devices[\(launched)].launch.credentials.homeAssistant.token"), "\(refused)")
        #expect(
            refused.contains(
                "devices[\(jailbroken)].backend.settings.login.password._0: an SSH password may only be"),
            "\(refused)")
        #expect(refused.contains("AWS_SECRET_ACCESS_KEY is not a key a plan file may read"))

        // The keys devices.yaml's password_env: names (either spelling) are a plan's to read.
        for key in ["IPAD2_SSH_PASS", "IPAD3_SSH_PASSWORD"] {
            #expect(DeployPlan.isSSHPasswordVariable(key))
        }
        for key in ["_SSH_PASS", "HA_TOKEN", "ipad2_ssh_pass", "X_SSH_PASS\n", "CI_DEPLOY_KEY"] {
            #expect(!DeployPlan.isSSHPasswordVariable(key), "\(key)")
        }
    }

    /// Duplicates, a billion retries and a negative timeout: each refused, all in one error.
    @Test func valuesAreHeldToDevicesYamlsBoundsAndEveryProblemIsReportedAtOnce() throws {
        var plan = try Self.plan()
        let first = try Self.index(plan) { $0.udid?.value?.isEmpty == false && !$0.steps.isEmpty }
        plan.devices.append(plan.devices[first])
        let duplicate = plan.devices.count - 1
        let running = plan.devices.indices.filter { !plan.devices[$0].steps.isEmpty }
        try #require(running.count >= 3)
        let (a, b, c) = (running[0], running[1], running[2])
        plan.devices[a].steps[0].retries = 1_000_000_000
        plan.devices[b].timeouts["connect"] = -5
        plan.devices[b].steps[0].deadline = .seconds(-1)
        plan.devices[c].timeouts["reboot"] = 10
        plan.devices[c].verification.timeout = 1e12
        let refused = Self.refusal { _ = try Self.load(plan) }
        for expected in [
            "devices[\(duplicate)].id: device '\(plan.devices[first].id)' is already devices[\(first)]",
            "devices[\(duplicate)].udid: UDID \(plan.devices[first].udid?.value ?? "") is already devices[\(first)]",
            "devices[\(a)].steps[0].retries: 1000000000 retries: a step is retried 0 to 2 times",
            "devices[\(b)].timeouts.connect: -5 s is not a deadline",
            "devices[\(b)].steps[0].deadline: -1 s is not a deadline",
            "devices[\(c)].timeouts.reboot: no step 'reboot'",
            "devices[\(c)].verification.timeout: 1000000000000 s is not a deadline",
        ] {
            #expect(refused.contains(expected), "\(expected)\n\(refused)")
        }
        #expect(refused.contains("refused: 7 things a plan file may not do"), "\(refused)")
    }

    /// Before: `steps: []` ran nothing and said "launch: false in devices.yaml" with exit 0; repeated
    /// steps and empty or `../` ids were taken.
    @Test func emptyOrRepeatedStepsAndUnusableIdsAreRefused() throws {
        var plan = try Self.plan()
        let running = plan.devices.indices.filter { !plan.devices[$0].steps.isEmpty }
        try #require(running.count >= 4)
        let (a, b, c, d) = (running[0], running[1], running[2], running[3])
        plan.devices[a].steps = []
        plan.devices[b].steps.append(plan.devices[b].steps[0])
        let repeated = plan.devices[b].steps.count - 1
        plan.devices[c].id = ""
        plan.devices[d].id = "../../etc"
        let refused = Self.refusal { _ = try Self.load(plan) }
        for expected in [
            "devices[\(a)].steps: no steps",
            "devices[\(b)].steps[\(repeated)]: step '\(plan.devices[b].steps[0].id)' is already steps[0]",
            "devices[\(c)].id: '' is not a device id",
            "devices[\(d)].id: '../../etc' is not a device id",
        ] {
            #expect(refused.contains(expected), "\(expected)\n\(refused)")
        }
    }

    @Test func aPlanFileWritesOnlyUnderTheRunsStateFolder() throws {
        var plan = try Self.plan()
        let device = try Self.index(plan) { $0.backend.kind == USBBackend.kind }
        try Self.edit(&plan, device, USBBackend.self) { $0.installRecords = "/home/victim/.ssh" }
        plan.artifacts = .demo(directory: plan.stateDirectory + "/../../../etc", bundleID: "x")
        let refused = Self.refusal { _ = try Self.load(plan) }
        #expect(
            refused.contains(
                "devices[\(device)].backend.settings.installRecords: '/home/victim/.ssh' is not under the plan's "
                    + "state folder"), "\(refused)")
        #expect(refused.contains("artifacts.demo.directory"), "\(refused)")
    }

    @Test func aSignedPlanRunsOnlyWithItsKeyAndTheKeyIsNeverShown() throws {
        let plan = try Self.plan()
        let key = "k3y-\(UUID().uuidString)"
        let signed = try PlanSignature.json(plan, environment: [PlanSignature.keyVariable: key])
        #expect(signed.contains("\"signature\" : \"hmac-sha256:"))
        #expect(!signed.contains(key))
        let unsigned = try PlanSignature.json(plan, environment: [:])
        #expect(!unsigned.contains("\"signature\""))

        // Good: the key checks it.
        let good = try Self.load(json: signed, environment: [PlanSignature.keyVariable: key])
        #expect(good.notes == ["plan.json: signature checked (HADEPLOY_PLAN_KEY)"])
        #expect(good.plan.deployID == plan.deployID)

        // Changed after signing: refused.
        var object = try #require(try JSONSerialization.jsonObject(with: Data(signed.utf8)) as? [String: Any])
        object["deployID"] = "d-2"
        let tampered = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        var refused = Self.refusal {
            _ = try Self.load(json: tampered, environment: [PlanSignature.keyVariable: key])
        }
        #expect(refused.contains("its signature does not match HADEPLOY_PLAN_KEY"), "\(refused)")
        #expect(!refused.contains(key))

        // Another key: refused.
        refused = Self.refusal {
            _ = try Self.load(json: signed, environment: [PlanSignature.keyVariable: "other"])
        }
        #expect(refused.contains("its signature does not match"), "\(refused)")
        #expect(!refused.contains(key))

        // Missing: refused when the key is set.
        refused = Self.refusal {
            _ = try Self.load(json: unsigned, environment: [PlanSignature.keyVariable: key])
        }
        #expect(refused.contains("not signed, and HADEPLOY_PLAN_KEY is set"), "\(refused)")

        // Without the key here, a signed plan runs, and the run says it did not check it.
        let unchecked = try Self.load(json: signed, environment: [:])
        #expect(
            unchecked.notes == [
                "plan.json is signed, but HADEPLOY_PLAN_KEY is not set here: its signature was not checked"
            ])
        #expect(try Self.load(json: unsigned, environment: [:]).notes.isEmpty)
    }
}
