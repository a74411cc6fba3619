import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import HADeployKit
import Testing

@testable import Versioning

@Suite struct DeployPlannerTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let token = "eyJhbGciOiJIUzI1NiJ9.Zm9vYmFy.planner-test-token"
    static let version = GitVersion(
        marketingVersion: "1.10.0", buildNumber: 57, tag: "v1.10.0", commitsSinceTag: 0, dirty: false,
        shallow: false)

    let configured = [
        "HA_SERVER": "http://ha.local:8123", "HA_TOKEN": token, "IPAD_MINI4_UDID": "00008020-001",
        "IPAD2_UDID": "abcdef0123", "IPAD2_IP": "10.0.0.20", "IPAD_MINI5_DEVICECTL_ID": "00008020-005",
    ]

    func plan(
        _ targets: [String], variables: [String: String] = [:], host: HostPlatform = .linux,
        configure: (inout DeployOptions) -> Void = { _ in }
    ) throws -> DeployPlan {
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: Self.root.appendingPathComponent("devices.yaml"), displayName: "devices.yaml")
        var options = DeployOptions(targets: targets)
        configure(&options)
        return try DeployPlanner(matrix: matrix, variables: variables, topology: Topology(host: host))
            .plan(options: options, version: Self.version, deployID: "deploy-1")
    }

    /// The app's own vocabulary (REAL-APP.md): server, token, dashboard; kiosk only when said.
    @Test func launchArgumentsAreTheAppsOwnKeys() throws {
        var variables = configured
        variables["HA_DASHBOARD"] = "living-room"
        let device = try #require(try plan(["mini4"], variables: variables).devices.first)
        #expect(
            device.launchArguments.redacted == [
                "-HAServerURL", "http://ha.local:8123", "-HAAccessToken", "***", "-HADashboard",
                "living-room",
            ])
        // Only the argv handed to the transport carries the real token.
        // The plan names the token; the launch reads it from the run's environment.
        #expect(device.launch.secrets == [SecretReference(environment: "HA_TOKEN")])
        let launched = try ResolvedLaunch(device.launch, environment: ["HA_TOKEN": Self.token])
        #expect(launched.arguments[3] == Self.token)
        #expect(launched.secretValues == [Self.token])
        #expect(device.udid == .value("00008020-001"))
        #expect(device.unsetKeys.isEmpty)
        // Nothing the app does not read.
        let all = try plan(["all"], variables: configured, host: .macOS).devices.flatMap(
            \.launchArguments.redacted)
        for invented in ["-HADeployID", "-HADeviceID", "-HADefaultDashboard"] {
            #expect(!all.contains(invented))
        }
    }

    /// On a Mac the Developer Disk Images come with Xcode
    /// (`<Xcode>/Contents/Developer/Platforms/iPhoneOS.platform/DeviceSupport/<version>/`); the usual
    /// `ddi_dir`, `~/Library/Developer/Xcode/iOS DeviceSupport`, holds symbol caches. Before, only
    /// `ddi_dir` was searched, and a Mac deploy to an iOS ≤ 16 device whose image Xcode had not
    /// mounted failed with "no Developer Disk Image". Linux searches `ddi_dir` only.
    @Test func aMacSearchesEachXcodesDeviceSupportForTheDeveloperDiskImage() throws {
        let yaml = """
            version: 1
            flavours:
              legacy: {xcode: /Applications/Xcode-13.2.1.app, archs: [armv7, arm64], deployment_target: "9.0", sdk: iphoneos, configuration: Release}
              modern: {xcode: /Applications/Xcode-26.app, archs: [arm64], deployment_target: "15.0", sdk: iphoneos, configuration: Release}
            devices:
              mini4: {product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern, transport: usb, udid: U1, ddi_dir: /ddi}
            """
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml")
        func images(_ host: HostPlatform) throws -> [String] {
            let plan = try DeployPlanner(matrix: matrix, variables: [:], topology: Topology(host: host))
                .plan(options: DeployOptions(targets: ["mini4"]), version: Self.version, deployID: "d")
            let device = try #require(plan.devices.first)
            return try #require(try Backends.configuration(USBBackend.self, of: device)).developerImages
        }
        let support = "/Contents/Developer/Platforms/iPhoneOS.platform/DeviceSupport"
        #expect(
            try images(.macOS) == [
                "/ddi", "/Applications/Xcode-26.app" + support, "/Applications/Xcode-13.2.1.app" + support,
                "/Applications/Xcode.app" + support,
            ])
        #expect(try images(.linux) == ["/ddi"])
    }

    /// The build location is decided here, once: a named xcodebuild builds here, a Mac builds
    /// here only with the flavour's Xcode, and otherwise the build host builds — or nothing can.
    @Test func eachFlavourBuildsWhereThePlanSays() throws {
        let yaml = """
            version: 1
            build_host: ssh://builder@${BUILD_MAC}
            flavours:
              modern: {xcode: /Applications/Xcode-26.app, archs: [arm64], deployment_target: "15.0", sdk: iphoneos, configuration: Release}
            devices:
              mini4: {product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern, transport: usb, udid: U1}
            """
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml")
        func location(
            _ host: HostPlatform, _ variables: [String: String], installed: Set<String>? = nil
        ) throws -> BuildLocation? {
            try DeployPlanner(
                matrix: matrix, variables: variables, topology: Topology(host: host),
                paths: HostPaths(installedDeveloperDirectories: installed)
            ).plan(options: DeployOptions(targets: ["mini4"]), version: Self.version, deployID: "d")
                .builds.first?.location
        }
        let mac = ["BUILD_MAC": "mac-mini"]
        #expect(try location(.linux, mac) == .buildHost("ssh://builder@mac-mini"))
        #expect(try location(.linux, [:]) == .nowhere)
        #expect(
            try location(.linux, mac.merging(["HADEPLOY_XCODEBUILD": "/x/xcodebuild"]) { a, _ in a }) == .here
        )
        let developer = "/Applications/Xcode-26.app/Contents/Developer"
        #expect(try location(.macOS, mac, installed: [developer]) == .here)
        #expect(try location(.macOS, mac, installed: []) == .buildHost("ssh://builder@mac-mini"))
        #expect(try location(.macOS, [:], installed: []) == .nowhere)
        // `plan --as-host macos`: Xcodes not looked for, taken as there.
        #expect(try location(.macOS, [:]) == .here)
    }

    @Test func dashboardPrecedence() throws {
        var variables = configured
        variables["HA_DASHBOARD"] = "wall-hall"
        func arguments(_ id: String, _ choice: DashboardChoice, _ values: [String: String]) throws -> [String]
        {
            try #require(try plan([id], variables: values) { $0.dashboard = choice }.devices.first)
                .launchArguments.redacted
        }
        #expect(try arguments("mini4", .unspecified, variables)[4...5] == ["-HADashboard", "wall-hall"])
        #expect(
            try arguments("mini4", .named("wall-kitchen"), variables)[4...5] == [
                "-HADashboard", "wall-kitchen",
            ])
        #expect(try arguments("mini4", .appDefault, variables)[4...5] == ["-HADashboard", ""])
        // The scripts' per-device defaults win over HA_DASHBOARD; --dashboard wins over both.
        #expect(
            try arguments("ipad2", .unspecified, variables)[4...5] == ["-HADashboard", "dashboard-office"])
        #expect(
            try arguments("mini5", .unspecified, variables)[4...5] == ["-HADashboard", "dashboard-landing"])
        #expect(try arguments("mini5", .named("x"), variables)[4...5] == ["-HADashboard", "x"])
        // `dashboard: ""` in devices.yaml is the app's default dashboard, as the app reads an empty key.
        let yaml = """
            flavours:
              modern: {archs: [arm64], deployment_target: "15.0"}
            devices:
              wall: {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: U, dashboard: ""}
            """
        let emptyPlan = try DeployPlanner(
            matrix: try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml"),
            variables: variables,
            topology: Topology(host: .linux)
        ).plan(options: DeployOptions(targets: ["wall"]), version: Self.version, deployID: "d")
        #expect(emptyPlan.devices[0].dashboard == .appDefault)
        #expect(emptyPlan.devices[0].launchArguments.redacted[4...5] == ["-HADashboard", ""])
        // Nothing configured anywhere: the device keeps the dashboard it has.
        #expect(!(try arguments("mini4", .unspecified, configured)).contains("-HADashboard"))
    }

    @Test func kioskIsSentOnlyWhenAsked() throws {
        func kiosk(_ id: String, _ flag: Bool?) throws -> String? {
            let arguments = try #require(
                try plan([id], variables: configured) { $0.kiosk = flag }.devices.first
            )
            .launchArguments.redacted
            return arguments.firstIndex(of: "-HAKioskMode").map { arguments[$0 + 1] }
        }
        #expect(try kiosk("mini4", nil) == nil, "absent: the app keeps the device's own setting")
        #expect(try kiosk("ipad2", nil) == "YES", "devices.yaml says kiosk: true, as the scripts sent")
        #expect(try kiosk("mini4", true) == "YES")
        #expect(try kiosk("ipad2", false) == "NO")
    }

    @Test func resetDemoAndTokenAreTheScriptsOptions() throws {
        let reset = try #require(try plan(["mini4"], variables: configured) { $0.reset = true }.devices.first)
        #expect(reset.launchArguments.redacted == ["-HAClearCredentials", "YES"])
        let demo = try #require(try plan(["mini4"]) { $0.demo = true }.devices.first)
        #expect(demo.launchArguments.redacted == ["-HADemoMode", "YES"])
        #expect(demo.unsetKeys == ["IPAD_MINI4_UDID"], "demo mode needs no Home Assistant")
        let token = try plan(["mini4"], variables: ["IPAD_MINI4_UDID": "u"]) {
            $0.token = Secret("launch-only-token")
            $0.server = "http://ha:8123"
        }
        // `--token` reaches the run as HA_TOKEN (the deploy sets it): the plan names it, never holds it.
        #expect(token.devices[0].launch.secrets == [SecretReference(environment: "HA_TOKEN")])
        #expect(token.devices[0].unsetKeys.isEmpty)
        #expect(!(try PlanPrinter.json(token)).contains("launch-only-token"))
        #expect(token.devices[0].unsetKeys.isEmpty)
        #expect(!(try PlanPrinter.json(token)).contains("launch-only-token"))
    }

    @Test func appSettingsIntegrationAndTheEventAreOptIns() throws {
        let yaml = """
            version: 1
            flavours:
              modern: {archs: [arm64], deployment_target: "15.0"}
            devices:
              wall:
                {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: U1, ha_integration: true,
                 ha_device: Kitchen iPad, app_settings: {HAThemeMode: 2, HAGradientEnabled: true}}
              old-build: {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: U2, loaded_event: true}
            """
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml")
        let plan = try DeployPlanner(matrix: matrix, variables: configured, topology: Topology(host: .linux))
            .plan(options: DeployOptions(targets: ["all"]), version: Self.version, deployID: "deploy-1")
        #expect(
            plan.devices[0].launchArguments.redacted[4...] == [
                "-HAAutoRegister", "YES", "-HAGradientEnabled", "YES", "-HAThemeMode", "2",
            ])
        #expect(plan.devices[0].verification.homeAssistant)
        #expect(plan.devices[0].verification.homeAssistantDevice == "Kitchen iPad")
        #expect(plan.devices[0].step(.subscribe) == nil)
        #expect(
            plan.devices[1].launchArguments.redacted[4...] == [
                "-HADeployID", "deploy-1", "-HADeviceID", "old-build",
            ])
        #expect(
            plan.devices[1].steps.map(\.id) == [
                .connect, .mount, .install, .subscribe, .launch, .verify, .crashCheck,
            ])
    }

    @Test func stepsDeadlinesAndRetriesAreResolvedPerBackend() throws {
        var variables = configured
        variables["IPHONE_UDID"] = "00008140-001"
        let linux = try plan(["mini4", "ipad2", "iphone"], variables: variables) { $0.screenshots = true }
        let mini4 = linux.devices[0]
        #expect(Self.route(mini4) == "usb local network", "a Wi-Fi device")
        #expect(
            mini4.steps.map(\.id) == [.connect, .mount, .install, .launch, .verify, .crashCheck, .screenshot])
        #expect(mini4.step(.connect)?.retries == 2)
        #expect(mini4.step(.connect)?.deadline == .seconds(30))
        #expect(mini4.step(.install)?.deadline == .sizedToApp(base: 60, bytesPerSecond: 4_000_000))
        #expect(mini4.step(.verify)?.deadline == .seconds(30))
        let ipad2 = linux.devices[1]
        #expect(Self.route(ipad2) == "ssh local usb", "its USB fallback through the local usbmuxd")
        #expect(ipad2.step(.mount) == nil)
        #expect(ipad2.step(.verify)?.deadline == .seconds(90))
        #expect(Self.route(linux.devices[2]) == "pymobiledevice3 local usb")
        let mac = try plan(["iphone", "sim"], variables: variables, host: .macOS) { $0.screenshots = true }
        #expect(Self.route(mac.devices[0]) == "devicectl - usb")
        #expect(mac.devices[0].step(.screenshot) == nil, "devicectl cannot take screenshots")
        #expect(Self.route(mac.devices[1]) == "simctl - usb")
        // Without --report no screenshot is planned, so none is taken.
        #expect(try plan(["mini4"], variables: configured).devices[0].step(.screenshot) == nil)
    }

    /// The old script's `ideviceinstaller -n -u UDID upgrade app.ipa`: usbmuxd's network lookup,
    /// said in the plan (text and JSON), an upgrade in place, and `launch: false` still composing.
    @Test func wifiDevicesUseTheNetworkLookupAndUpgradeInPlace() throws {
        let mini4 = try #require(try plan(["mini4"], variables: configured).devices.first)
        #expect(mini4.backend.lookup == .network)
        #expect(Backends.describe(mini4.backend) == "Wi-Fi via the local usbmuxd (its network lookup)")
        #expect(Backends.summary(of: .connect, for: mini4, version: "1.0 (1)").contains("Wi-Fi"))
        #expect(Backends.summary(of: .install, for: mini4, version: "1.0 (1)").contains("upgrade in place"))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var backend = mini4.backend
        backend.settings = .null
        let json = String(decoding: try encoder.encode(backend), as: UTF8.self)
        #expect(json == #"{"kind":"usb","lookup":"network","settings":null,"usbmuxd":"local"}"#)
        #expect(try Backends.configuration(USBBackend.self, of: mini4)?.network == true)

        let yaml = """
            flavours:
              modern: {archs: [arm64], deployment_target: "15.0", sdk: iphoneos}
            devices:
              mini4:
                product_type: iPad5,1
                ios: "15.8"
                arch: arm64
                flavour: modern
                transport: usb
                network: true
                launch: false
                udid: ${IPAD_MINI4_UDID}
              plugged:
                product_type: iPad5,1
                ios: "15.8"
                arch: arm64
                flavour: modern
                transport: usb
                udid: ${IPAD_MINI4_UDID}
            """
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml")
        let plan = try DeployPlanner(matrix: matrix, variables: configured, topology: Topology(host: .linux))
            .plan(
                options: DeployOptions(targets: ["mini4", "plugged"]), version: Self.version, deployID: "d")
        #expect(Self.route(plan.devices[0]) == "usb local network")
        #expect(plan.devices[0].steps.map(\.id) == [.connect, .mount, .install], "launch: false on Wi-Fi")
        #expect(Self.route(plan.devices[1]) == "usb local usb")
        #expect(plan.devices[1].backend.lookup == .usb)
        let text = PlanPrinter.text(plan)
        #expect(text.contains("Wi-Fi via the local usbmuxd"), "\(text)")
    }

    @Test func virtualTwinsArePartOfThePlan() throws {
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: Self.root.appendingPathComponent("devices.yaml"), displayName: "devices.yaml")
        let twins = VirtualTwins(
            address: "UNIX:/tmp/v/usbmuxd.sock", udids: ["mini4": "twin-mini4", "ipad2": "twin-ipad2"],
            unavailable: ["sim": "a simulator has no virtual twin"])
        let plan = try DeployPlanner(
            matrix: matrix, variables: [:], topology: Topology(host: .linux, virtual: twins)
        )
        .plan(
            options: DeployOptions(targets: ["mini4", "ipad2", "sim"]), version: Self.version,
            deployID: "d")
        #expect(
            Self.route(plan.devices[0]) == "usb virtual:UNIX:/tmp/v/usbmuxd.sock network",
            "the Wi-Fi mini4's twin is a network twin")
        #expect(Self.route(plan.devices[1]) == "usb virtual:UNIX:/tmp/v/usbmuxd.sock usb")
        #expect(plan.devices[0].udid == .value("twin-mini4"))
        #expect(plan.devices[1].udid == .value("twin-ipad2"))
        #expect(
            plan.devices.allSatisfy { $0.unsetKeys.isEmpty }, "a twin needs no UDID, host or Home Assistant")
        #expect(plan.devices[2].availability == .notOnThisHost(reason: "a simulator has no virtual twin"))
        #expect(!plan.verify)
        #expect(plan.verificationSkipped == "verification skipped: HA_SERVER and HA_TOKEN are not both set")
        #expect(plan.devices[0].step(.verify) == nil)
    }

    @Test func unsetValuesAreATypeShownAndNamed() throws {
        let device = try #require(try plan(["ipad2"]).devices.first)
        #expect(device.udid == .unset(["IPAD2_UDID"]))
        #expect(device.host == .unset(["IPAD2_IP"]))
        #expect(Set(device.unsetKeys) == ["IPAD2_UDID", "IPAD2_IP", "HA_SERVER", "HA_TOKEN"])
        #expect(
            device.launchArguments.redacted[0...3] == [
                "-HAServerURL", "<unset: HA_SERVER>", "-HAAccessToken", "<unset: HA_TOKEN>",
            ])
        let text = PlanPrinter.text(try plan(["ipad2"]))
        #expect(text.contains("udid:      <unset: IPAD2_UDID>"))
        #expect(text.contains("needs:     "))
    }

    @Test func theServerOptionWins() throws {
        let plan = try plan(["mini4"], variables: configured) { $0.server = "https://other:8443" }
        #expect(plan.server == .value("https://other:8443"))
        #expect(plan.devices[0].launchArguments.redacted[1] == "https://other:8443")
    }

    @Test func theTokenNeverAppearsInPrintedPlans() throws {
        var variables = configured
        variables["IPAD2_SSH_PASS"] = "hunter2-password"
        let everything = try plan(["all", "jailbroken", "sims"], variables: variables, host: .macOS)
        let text = PlanPrinter.text(everything)
        let json = try PlanPrinter.json(everything)
        for output in [text, json] {
            #expect(!output.contains(Self.token))
            #expect(!output.contains("hunter2-password"))
        }
        #expect(text.contains("-HAAccessToken ***"))
        let decoded = try #require(
            try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let devices = try #require(decoded["devices"] as? [[String: Any]])
        #expect(devices.count == 12)
        let arguments = try #require(devices.first?["launchArguments"] as? [String])
        #expect(arguments[2...3] == ["-HAAccessToken", "***"])
    }

    @Test func oneBuildPerFlavourForTheDevicesThisHostCanDrive() throws {
        // The app's fleet (1.3): one universal build for every physical iOS device.
        let linux = try plan(["all", "jailbroken", "sims"], variables: configured, host: .linux)
        #expect(linux.builds.map(\.flavour) == ["legacy"])
        #expect(
            linux.builds.map(\.devices) == [
                ["iphone", "mini5", "mini4", "ipad4", "ipadpro", "ipad2", "ipad3"]
            ])
        #expect(linux.builds[0].archs == ["armv7", "arm64"])
        #expect(linux.builds[0].deploymentTarget == "9.0")
        let skipped = linux.devices.filter { $0.availability != .available }.map(\.id)
        #expect(skipped == ["mac", "sim", "sim-iphone", "sim-ios93", "sim-ios103"])

        let mac = try plan(["all", "jailbroken", "sims"], variables: configured, host: .macOS)
        #expect(mac.builds.map(\.flavour) == ["legacy", "simulator", "rosettasim", "mac"])
        #expect(mac.devices.allSatisfy { $0.availability == .available })

        let noBuild = try plan(["mini4"], variables: configured) { $0.build = false }
        #expect(noBuild.builds.map(\.enabled) == [false])
        #expect(noBuild.builds[0].commands.isEmpty)
    }

    @Test func anUnknownTargetIsAUsageError() throws {
        let error = #expect(throws: UnknownTargetError.self) { try plan(["mini4", "ipda2"]) }
        #expect(error?.suggestion == "ipad2")
        #expect(error?.exitStatus == .usage)
    }

    /// A device's backend, its usbmuxd and its lookup, as one line (`usb local network`).
    static func route(_ device: DevicePlan) -> String {
        let route: String
        switch device.backend.usbRoute {
        case .local?: route = "local"
        case .virtual(let address)?: route = "virtual:\(address)"
        case .usbHost(let url)?: route = url
        case nil: route = "-"
        }
        return "\(device.backend.kind) \(route) \(device.backend.lookup.rawValue)"
    }
}
