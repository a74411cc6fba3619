import Foundation
import TestSupport
import Testing

@Suite struct PlanCommandTests {
    static let fileToken = "file-token-0123456789abcdef"
    static let environmentToken = "env-token-fedcba9876543210"

    func launchLine(_ stdout: String, device id: String) -> String? {
        guard let header = stdout.range(of: "[\(id)]") else { return nil }
        return stdout[header.upperBound...].split(separator: "\n").first { $0.contains("launch:") }
            .map { String($0).trimmingCharacters(in: .whitespaces) }
    }

    @Test func planAllWorksWithoutADotEnv() async throws {
        let project = try await Project(commits: 3, tag: "v1.0.0")
        #expect(!FileManager.default.fileExists(atPath: project.url.appendingPathComponent(".env").path))
        // `all` is the app's fleet; the iPads 2 and 3 and the simulators by their groups.
        let fleet = try await project.run("plan", "all")
        #expect(fleet.status == 0, "\(fleet.stderr)")
        for id in ["iphone", "mini5", "mini4", "ipad4", "ipadpro", "mac"] {
            #expect(fleet.stdout.contains("[\(id)]"), "\(id)")
        }
        #expect(!fleet.stdout.contains("[ipad2]") && !fleet.stdout.contains("[sim]"))
        let result = try await project.run("plan", "all", "jailbroken", "sims")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("version 1.0.0 (3)"))
        for id in [
            "ipad2", "ipad3", "ipad4", "mini4", "mini5", "iphone", "ipadpro", "sim", "sim-iphone",
            "sim-ios93",
            "sim-ios103",
        ] {
            #expect(result.stdout.contains("[\(id)]"), "\(id)")
        }
        #expect(result.stdout.contains("udid:      <unset: IPAD2_UDID>"))
        #expect(result.stdout.contains("host:      <unset: IPAD2_IP>"))
        #expect(
            launchLine(result.stdout, device: "mini4")
                == "launch:    -HAServerURL '<unset: HA_SERVER>' -HAAccessToken '<unset: HA_TOKEN>'")
        #expect(
            launchLine(result.stdout, device: "ipad2")
                == "launch:    -HAServerURL '<unset: HA_SERVER>' -HAAccessToken '<unset: HA_TOKEN>' "
                + "-HADashboard dashboard-office -HAKioskMode YES")
    }

    /// The old script's `mac` target: planned with its steps as a Mac would run them, and on Linux
    /// not available, with why.
    @Test func theMacTargetIsPlannedForAMacAndNotAvailableOnLinux() async throws {
        let project = try await Project(commits: 2, tag: "v1.2.5")
        try project.write(
            "HA_SERVER=http://ha.local:8123\nHA_TOKEN=\(Self.fileToken)\nAPPLE_TEAM_ID=ABCDE12345\n",
            to: ".env")
        let result = try await project.run("plan", "--as-host", "macos", "mac", "--json")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains(Self.fileToken))
        let plan = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let device = try #require((plan["devices"] as? [[String: Any]])?.first)
        #expect(device["id"] as? String == "mac")
        #expect((device["backend"] as? [String: Any])?["kind"] as? String == "mac")
        #expect(device["availability"] as? String == "available")
        let steps = try #require(device["steps"] as? [[String: Any]])
        #expect(
            steps.compactMap { $0["id"] as? String } == [
                "connect", "install", "launch", "verify", "crash_check",
            ])
        #expect(steps.allSatisfy { $0["summary"] == nil }, "the plan is data; sentences are printed")
        let text = try await project.run("plan", "--as-host", "macos", "mac")
        let launch = try #require(text.stdout.split(separator: "\n").first { $0.contains(". launch: ") })
        #expect(launch.contains("defaults import") && launch.contains("killall") && launch.contains("open"))
        let build = try #require((plan["builds"] as? [[String: Any]])?.first)
        let xcodebuild = try #require((build["commands"] as? [[String: Any]])?.last)
        let arguments = try #require(xcodebuild["arguments"] as? [String])
        #expect(arguments.contains("platform=macOS,variant=Mac Catalyst"))
        #expect(
            arguments.contains("DEVELOPMENT_TEAM=ABCDE12345") && arguments.contains("ONLY_ACTIVE_ARCH=YES"))
        #expect(!arguments.contains("-sdk"))

        let linux = try await project.run("plan", "mac", "--json")
        #expect(linux.status == 0, "\(linux.stderr)")
        let linuxPlan = try #require(
            try JSONSerialization.jsonObject(with: Data(linux.stdout.utf8)) as? [String: Any])
        let linuxDevice = try #require((linuxPlan["devices"] as? [[String: Any]])?.first)
        let availability = try #require(linuxDevice["availability"] as? String)
        #expect(availability.hasPrefix("not available on this host: ") && availability.contains("Mac"))
        #expect((linuxDevice["steps"] as? [Any])?.isEmpty == true)
        #expect((linuxPlan["builds"] as? [Any])?.isEmpty == true)
    }

    @Test func theDemoCommandRuns() async throws {
        let project = try await Project(commits: 2, tag: "v1.0.0")
        let result = try await project.run("all", "--kiosk", "--dry-run")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("hadeploy plan — version 1.0.0 (2)"))
        #expect(!result.stdout.contains("-HAKioskMode NO"), "--kiosk forces it on for the iPhone too")
    }

    /// `make demo` on the committed devices.yaml: under `--virtual` the iOS 17+ devices' twins stand
    /// for them (driven through pymobiledevice3), so no IPHONE_DEVICECTL_ID from .env is needed (the
    /// demo failed both with "needs IPHONE_DEVICECTL_ID" when they moved to pymobiledevice3).
    @Test func theVirtualPlanNeedsNoDeviceIdForTheIOS17Twins() async throws {
        let project = try await Project(commits: 2, tag: "v1.0.0")
        let result = try await project.run(
            "plan", "iphone", "mini5", "--virtual", "--json", environment: ["USBMUXD_SOCKET_ADDRESS": ""])
        #expect(result.status == 0, "\(result.stderr)")
        let plan = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let devices = try #require(plan["devices"] as? [[String: Any]])
        #expect(devices.count == 2)
        for device in devices {
            let id = device["id"] as? String ?? "?"
            #expect((device["unsetKeys"] as? [String]) == [], "\(id): \(device["unsetKeys"] ?? "")")
            #expect(
                "\(device["backend"] ?? "")".contains("pymobiledevice3"), "\(id): \(device["backend"] ?? "")")
            #expect((device["udid"] as? String)?.isEmpty == false, "\(id) has the twin's UDID")
        }
    }

    @Test func theTokenNeverAppearsInAnyOutput() async throws {
        let project = try await Project(commits: 2, tag: "v1.0.0")
        try project.write(
            "HA_SERVER=http://ha.local:8123\nHA_TOKEN=\(Self.fileToken)\nIPAD2_SSH_PASS=hunter2pw\n",
            to: ".env")
        for environment in [[:], ["HA_TOKEN": Self.environmentToken]] {
            for arguments in [
                ["plan", "all", "jailbroken", "sims"], ["plan", "all", "jailbroken", "sims", "--json"],
                ["all", "jailbroken", "sims", "--dry-run"],
                ["all", "jailbroken", "sims", "--dry-run", "--json"],
                ["deploy", "mini4", "--dry-run"],
            ] {
                let result = try await HADeployBinary.run(
                    arguments, in: project.url, environment: environment)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                for secret in [Self.fileToken, Self.environmentToken, "hunter2pw"] {
                    #expect(!result.stdout.contains(secret), "\(arguments) stdout")
                    #expect(!result.stderr.contains(secret), "\(arguments) stderr")
                }
                if arguments.contains("--json") {
                    let plan = try #require(
                        try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
                    let devices = try #require(plan["devices"] as? [[String: Any]])
                    #expect(devices.count == 12)
                    for device in devices {
                        let arguments = try #require(device["launchArguments"] as? [String])
                        #expect(
                            arguments[0...3] == [
                                "-HAServerURL", "http://ha.local:8123", "-HAAccessToken", "***",
                            ])
                    }
                } else {
                    #expect(result.stdout.contains("-HAAccessToken ***"))
                }
            }
        }
    }

    @Test func kioskFlagsOverrideTheDevicesSetting() async throws {
        let project = try await Project(commits: 1)
        // Sent only when asked (the app keeps a device's own setting otherwise) or set in devices.yaml.
        let plain = try await project.run("plan", "iphone", "mini4", "ipad2")
        #expect(launchLine(plain.stdout, device: "iphone")?.contains("-HAKioskMode") == false)
        #expect(launchLine(plain.stdout, device: "mini4")?.contains("-HAKioskMode") == false)
        #expect(launchLine(plain.stdout, device: "ipad2")?.contains("-HAKioskMode YES") == true)
        let on = try await project.run("plan", "iphone", "--kiosk")
        #expect(launchLine(on.stdout, device: "iphone")?.contains("-HAKioskMode YES") == true)
        let off = try await project.run("plan", "mini4", "--no-kiosk")
        #expect(launchLine(off.stdout, device: "mini4")?.contains("-HAKioskMode NO") == true)
    }

    @Test func dashboardOptions() async throws {
        let project = try await Project(commits: 1)
        try project.write("HA_DASHBOARD=wall-hall\n", to: ".env")
        let named = try await project.run("mini4", "ipad2", "--dashboard", "wall-kitchen", "--dry-run")
        #expect(named.status == 0, "\(named.stderr)")
        for id in ["mini4", "ipad2"] {
            #expect(launchLine(named.stdout, device: id)?.contains("-HADashboard wall-kitchen") == true)
        }
        #expect(!named.stdout.contains("[iphone]"))
        let fromEnv = try await project.run("plan", "mini4")
        #expect(launchLine(fromEnv.stdout, device: "mini4")?.contains("-HADashboard wall-hall") == true)
        let appDefault = try await project.run("plan", "mini4", "--default")
        #expect(launchLine(appDefault.stdout, device: "mini4")?.hasSuffix("-HADashboard ''") == true)

        let conflict = try await project.run("plan", "mini4", "--dashboard", "x", "--default")
        #expect(conflict.status == 64)
        #expect(conflict.stderr.contains("--dashboard and --default conflict"))
        #expect(conflict.stdout == "")
    }

    @Test func screenshotFlagsNeedAReportFolder() async throws {
        let project = try await Project(commits: 1)
        for flag in ["--fail-on-visual-change", "--accept-screenshots"] {
            let refused = try await project.run("mini4", flag, "--dry-run")
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("\(flag) needs --report DIR"), "\(refused.stderr)")
        }
        let planned = try await project.run("mini4", "--accept-screenshots", "--report", "out", "--dry-run")
        #expect(planned.status == 0, "\(planned.stderr)")
    }

    @Test func targetsAreWordsFromDevicesYaml() async throws {
        let project = try await Project(commits: 1)
        let simIPhone = try await project.run("sim", "iphone", "--dry-run")
        #expect(simIPhone.stdout.contains("[sim-iphone]"))
        #expect(!simIPhone.stdout.contains("[sim]"))
        let sim = try await project.run("plan", "sim")
        #expect(sim.stdout.contains("[sim]"))
        #expect(!sim.stdout.contains("[sim-iphone]"))

        for arguments in [["plan", "mini6"], ["mini6", "--dry-run"], ["plan", "mini4", "mini6"]] {
            let unknown = try await HADeployBinary.run(arguments, in: project.url)
            #expect(unknown.status == 64, "\(arguments)")
            #expect(unknown.stdout == "")
            #expect(unknown.stderr.contains("unknown target 'mini6' — did you mean 'mini4'?"))
            #expect(
                unknown.stderr.contains(
                    "Valid targets: ipad2, ipad2-usb, ipad3, ipad4, ipad4-usb, mini4, mini5, iphone, ipadpro, "
                        + "ipad-pro, sim, sim ipad, sim-ipad, sim-iphone, sim iphone, sim-ios93, sim-ios103, mac, "
                        + "all, ipads, jailbroken, sims"
                ))
        }
        let none = try await project.run("plan")
        #expect(none.status == 64)
    }

    @Test func aBrokenDevicesYamlListsEveryProblemWithExit78() async throws {
        let project = try await Project(commits: 1)
        var yaml = try project.read("devices.yaml")
        // The iPad 2 only (the first armv7 device on ssh).
        let armv7 = try #require(yaml.range(of: "    flavour: legacy\n    transport: ssh"))
        yaml.replaceSubrange(armv7, with: "    flavour: modern\n    transport: ssh")
        yaml = yaml.replacingOccurrences(of: "    product_type: iPad5,1", with: "    product_typ: iPad5,1")
        try project.write(yaml, to: "broken.yaml")
        let result = try await project.run("plan", "all", "--config", "broken.yaml")
        #expect(result.status == 78)
        #expect(result.stdout == "")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == "error: broken.yaml is not valid (2 problems):")
        // Where the problems are in the file (1-based), found in the text itself.
        let source = yaml.components(separatedBy: "\n")
        let ipad2 = try #require(source.firstIndex(of: "  ipad2:")) + 1
        let typo = try #require(source.firstIndex { $0.hasPrefix("    product_typ:") }) + 1
        #expect(
            lines.contains {
                $0.hasPrefix("broken.yaml:\(ipad2):3: error: device 'ipad2' is armv7 but flavour 'modern'")
            }, "\(lines)")
        #expect(
            lines.contains(
                "broken.yaml:\(typo):5: error: device 'mini4': unknown key 'product_typ' (did you mean 'product_type'?)"
            ), "\(lines)")

        try project.write("version: 1\ndevices: [\n", to: "syntax.yaml")
        let syntax = try await project.run("plan", "all", "--config", "syntax.yaml")
        #expect(syntax.status == 78)
        #expect(syntax.stderr.contains("syntax.yaml:3:1: error: YAML syntax error:"))

        let missing = try await project.run("plan", "all", "--config", "nope.yaml")
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("nope.yaml:1:1: error: file not found"))
    }
}

@Test func onGitHubActionsAnInvalidMatrixIsAnnotatedOnItsLines() async throws {
    let project = try await Project(commits: 1)
    var yaml = try project.read("devices.yaml")
    yaml = yaml.replacingOccurrences(of: "    product_type: iPad5,1", with: "    product_typ: iPad5,1")
    try project.write(yaml, to: "broken.yaml")
    let typo =
        try #require(yaml.components(separatedBy: "\n").firstIndex { $0.hasPrefix("    product_typ:") }) + 1
    let result = try await project.run(
        "plan", "all", "--config", "broken.yaml", environment: ["GITHUB_ACTIONS": "true"])
    #expect(result.status == 78)
    #expect(
        result.stderr.contains(
            "::error file=broken.yaml,line=\(typo),col=5,title=hadeploy::device 'mini4': unknown key "
                + "'product_typ' (did you mean 'product_type'?)"), "\(result.stderr)")
}

/// The build commands `plan --json` prints are the ones the build runs, tools included.
@Suite struct PlannedBuildCommandsTests {
    static let fixtures = HADeployBinary.repositoryRoot.appendingPathComponent(
        "Tests/HADeployKitTests/Fixtures")

    @Test func theBuildRunsExactlyThePlannedCommands() async throws {
        let project = try await Project(commits: 2, tag: "v3.0.0", copyProjectFiles: false)
        try project.write(
            """
            version: 1
            flavours:
              modern: {xcode: /Applications/Xcode-26.app, archs: [arm64], deployment_target: "15.0",
                       sdk: iphoneos, configuration: Release, settings: {ENABLE_DEBUG_DYLIB: "NO"}}
            devices:
              mini4: {product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern, transport: usb, udid: U1}
            """, to: "devices.yaml")
        try project.write("name: HADashboard\n", to: "Generated/project.yml")
        let environment = [
            "HADEPLOY_XCODEBUILD": Self.fixtures.appendingPathComponent("xcodebuild-standin.py").path,
            "HADEPLOY_XCODEGEN": Self.fixtures.appendingPathComponent("xcodegen-standin.sh").path,
        ]
        let plan = try await HADeployBinary.run(
            ["plan", "mini4", "--json"], in: project.url, environment: environment)
        #expect(plan.status == 0, "\(plan.stderr)")
        let decoded = try #require(
            try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])
        let builds = try #require(decoded["builds"] as? [[String: Any]])
        let commands = try #require(builds.first?["commands"] as? [[String: Any]])
        let planned = commands.map { command -> String in
            let executable = (command["executable"] as? String ?? "") as NSString
            return ([executable.lastPathComponent] + (command["arguments"] as? [String] ?? [])).joined(
                separator: " ")
        }
        #expect(planned.count == 2)

        let build = try await HADeployBinary.run(
            ["build", "mini4"], in: project.url, environment: environment)
        #expect(build.status == 0, "\(build.stderr)")
        // The stand-ins log `<tool> <arguments>` as they received them.
        let log = try String(contentsOf: project.url.appendingPathComponent("standin.log"), encoding: .utf8)
        let ran = log.split(separator: "\n").map { line -> String in
            line.hasPrefix("xcodegen ")
                ? "xcodegen-standin.sh" + line.dropFirst("xcodegen".count)
                : "xcodebuild-standin.py " + line
        }
        #expect(ran == planned)
    }
}
