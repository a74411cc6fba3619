import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import Testing
import Versioning

@Suite struct DeployPlannerTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let token = "eyJhbGciOiJIUzI1NiJ9.Zm9vYmFy.planner-test-token"
    static let version = GitVersion(
        marketingVersion: "1.10.0", buildNumber: 57, tag: "v1.10.0", commitsSinceTag: 0, dirty: false,
        shallow: false)

    func plan(
        _ targets: [String], variables: [String: String] = [:], host: HostPlatform = .linux,
        configure: (inout DeployOptions) -> Void = { _ in }
    ) throws -> DeployPlan {
        let matrix = try SpecLoader().load(
            contentsOf: Self.root.appendingPathComponent("devices.yaml"), displayName: "devices.yaml")
        var options = DeployOptions(targets: targets)
        configure(&options)
        return try DeployPlanner(matrix: matrix, variables: variables, host: host)
            .plan(options: options, version: Self.version, deployID: "deploy-1")
    }

    let configured = [
        "HA_SERVER": "http://ha.local:8123", "HA_TOKEN": token, "IPAD_MINI4_UDID": "00008020-001",
        "IPAD2_UDID": "abcdef0123", "IPAD2_IP": "10.0.0.20",
    ]

    @Test func launchArgumentsAreExact() throws {
        let device = try #require(try plan(["mini4"], variables: configured).devices.first)
        #expect(
            device.launchArguments.redacted == [
                "-HAServerURL", "http://ha.local:8123", "-HAAccessToken", "***", "-HADefaultDashboard", "YES",
                "-HAKioskMode", "YES", "-HADeployID", "deploy-1", "-HADeviceID", "mini4",
            ])
        // Only the argv handed to the transport carries the real token.
        #expect(device.launchArguments.revealed()[3] == Self.token)
        #expect(device.launchArguments.secretValues == [Self.token])
        #expect(
            device.launchArguments.description
                == "-HAServerURL http://ha.local:8123 -HAAccessToken *** -HADefaultDashboard YES "
                + "-HAKioskMode YES -HADeployID deploy-1 -HADeviceID mini4")
        #expect(device.udid == "00008020-001")
        #expect(device.unsetKeys.isEmpty)
    }

    @Test func dashboardPrecedence() throws {
        var variables = configured
        variables["HA_DASHBOARD"] = "wall-hall"
        func arguments(_ choice: DashboardChoice) throws -> [String] {
            try #require(try plan(["mini4"], variables: variables) { $0.dashboard = choice }.devices.first)
                .launchArguments.redacted
        }
        #expect(try arguments(.unspecified)[4...5] == ["-HADashboard", "wall-hall"])
        #expect(try arguments(.named("wall-kitchen"))[4...5] == ["-HADashboard", "wall-kitchen"])
        #expect(try arguments(.appDefault)[4...5] == ["-HADefaultDashboard", "YES"])
    }

    @Test func kioskFlagsOverrideTheDeviceDefault() throws {
        func kiosk(_ id: String, _ flag: Bool?) throws -> (Bool, String) {
            let device = try #require(try plan([id], variables: configured) { $0.kiosk = flag }.devices.first)
            let arguments = device.launchArguments.redacted
            let index = try #require(arguments.firstIndex(of: "-HAKioskMode"))
            return (device.kiosk, arguments[index + 1])
        }
        #expect(try kiosk("mini4", nil) == (true, "YES"))
        #expect(try kiosk("iphone", nil) == (false, "NO"), "devices.yaml says kiosk: false")
        #expect(try kiosk("iphone", true) == (true, "YES"))
        #expect(try kiosk("mini4", false) == (false, "NO"))
    }

    @Test func unsetValuesAreShownAndNamed() throws {
        let device = try #require(try plan(["ipad2"]).devices.first)
        #expect(device.udid == "<unset: IPAD2_UDID>")
        #expect(device.host == "<unset: IPAD2_IP>")
        #expect(Set(device.unsetKeys) == ["IPAD2_UDID", "IPAD2_IP", "HA_SERVER", "HA_TOKEN"])
        #expect(
            device.launchArguments.redacted[0...3] == [
                "-HAServerURL", "<unset: HA_SERVER>", "-HAAccessToken", "***",
            ])
        let text = PlanPrinter.text(try plan(["ipad2"]))
        #expect(text.contains("udid:      <unset: IPAD2_UDID>"))
        #expect(text.contains("needs:     IPAD2_UDID, IPAD2_IP, HA_SERVER, HA_TOKEN"))
    }

    @Test func theServerOptionWins() throws {
        let plan = try plan(["mini4"], variables: configured) { $0.server = "https://other:8443" }
        #expect(plan.server == "https://other:8443")
        #expect(plan.devices[0].launchArguments.redacted[1] == "https://other:8443")
    }

    @Test func theTokenNeverAppearsInPrintedPlans() throws {
        var variables = configured
        variables["IPAD2_SSH_PASS"] = "hunter2-password"
        let everything = try plan(["all"], variables: variables, host: .macOS)
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
        #expect(devices.count == 10)
        let arguments = try #require(devices.first?["launchArguments"] as? [String])
        #expect(arguments[2...3] == ["-HAAccessToken", "***"])
    }

    @Test func oneBuildPerFlavourForTheDevicesThisHostCanDrive() throws {
        let linux = try plan(["all"], variables: configured, host: .linux)
        #expect(linux.builds.map(\.flavour) == ["legacy", "modern"])
        #expect(linux.builds.map(\.devices) == [["ipad2", "ipad3", "ipad4"], ["iphone", "mini5", "mini4"]])
        #expect(linux.builds[0].archs == ["armv7", "arm64"])
        #expect(linux.builds[0].deploymentTarget == "9.0")
        let skipped = linux.devices.filter { $0.availability != .available }.map(\.id)
        #expect(skipped == ["sim", "sim-iphone", "sim-ios93", "sim-ios103"])

        let mac = try plan(["all"], variables: configured, host: .macOS)
        #expect(mac.builds.map(\.flavour) == ["legacy", "modern", "simulator", "rosettasim"])
        #expect(mac.devices.allSatisfy { $0.availability == .available })

        let noBuild = try plan(["mini4"], variables: configured) { $0.build = false }
        #expect(noBuild.builds.map(\.enabled) == [false])
        #expect(noBuild.devices[0].steps.first == "use the existing modern build")
    }

    @Test func anUnknownTargetIsAUsageError() throws {
        let error = #expect(throws: UnknownTargetError.self) { try plan(["mini4", "ipda2"]) }
        #expect(error?.suggestion == "ipad2")
        #expect(error?.exitStatus == .usage)
    }
}
