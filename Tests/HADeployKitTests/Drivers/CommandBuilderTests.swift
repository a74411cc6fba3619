import DeviceSpec
import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployBuild
@testable import HADeployDrivers
@testable import HADeployKit
@testable import Versioning

@Suite struct CommandBuilderTests {
    let udid = "3F8E2B71-6C0D-4A95-B1E4-8D7C2A9F0B33"

    @Test func simctlArgumentVectors() {
        let simctl = SimctlCommands()
        #expect(simctl.listDevices().executable == "xcrun")
        #expect(simctl.listDevices().arguments == ["simctl", "list", "-j", "devices"])
        #expect(simctl.boot(udid).arguments == ["simctl", "boot", udid])
        #expect(simctl.bootStatus(udid).arguments == ["simctl", "bootstatus", udid, "-b"])
        #expect(
            simctl.install(udid, app: "/b/HA Dashboard.app").arguments == [
                "simctl", "install", udid, "/b/HA Dashboard.app",
            ])
        #expect(
            simctl.terminate(udid, bundleID: "com.example.hadashboard").arguments
                == ["simctl", "terminate", udid, "com.example.hadashboard"])
        #expect(
            simctl.screenshot(udid, to: "/tmp/s.png").arguments == [
                "simctl", "io", udid, "screenshot", "/tmp/s.png",
            ])
        #expect(simctl.listDevices().environment.isEmpty)
    }

    /// The `mac` flavour of the committed matrix builds exactly as the app's `scripts/build.sh mac`:
    /// the destination picks the Mac Catalyst variant, Debug, arm64 only, development signing with
    /// the team (plus hadeploy's own derived-data and result-bundle paths).
    @Test func theMacFlavourBuildsAsTheAppsScriptDoes() throws {
        let (_, _, matrix) = try DriverTestPlans.plan("mac")
        let flavour = try #require(matrix.flavour(named: "mac"))
        let builder = BuildCommandBuilder(
            variables: ["APPLE_TEAM_ID": "ABCDE12345", "ASC_KEY_PATH": "/secret/AuthKey.p8"],
            version: .init(
                marketingVersion: "1.2.5", buildNumber: 158, tag: "v1.2.5", commitsSinceTag: 0, dirty: false,
                shallow: false))
        let command = builder.xcodebuild(flavour)
        #expect(command.executable == "xcodebuild")
        #expect(
            command.arguments == [
                "build", "-project", "HADashboard.xcodeproj", "-scheme", "HADashboard", "-configuration",
                "Debug",
                "-destination", "platform=macOS,variant=Mac Catalyst",
                "-derivedDataPath", ".hadeploy/build/mac/DerivedData",
                "-resultBundlePath", ".hadeploy/build/mac/mac-158.xcresult",
                "ARCHS=arm64", "ONLY_ACTIVE_ARCH=YES", "MARKETING_VERSION=1.2.5",
                "CURRENT_PROJECT_VERSION=158",
                "CODE_SIGN_IDENTITY=Apple Development", "CODE_SIGN_STYLE=Automatic",
                "ENABLE_DEBUG_DYLIB=NO", "MERGED_BINARY_TYPE=none", "DEVELOPMENT_TEAM=ABCDE12345",
                // As the app's build.sh mac (1.3): provisioning updates, with the App Store Connect key.
                "-allowProvisioningUpdates", "-authenticationKeyPath", "/secret/AuthKey.p8",
                "-authenticationKeyID", "<unset: ASC_KEY_ID>", "-authenticationKeyIssuerID",
                "<unset: ASC_ISSUER_ID>",
            ])
        #expect(command.environment == ["DEVELOPER_DIR": "/Applications/Xcode.app/Contents/Developer"])
        #expect(builder.commands(flavour).map(\.executable) == ["xcodegen", "xcodebuild"])
    }

    /// A device build without an App Store Connect key signs with the Apple ID in Xcode's settings:
    /// before, `-authenticationKeyPath "<unset: ASC_KEY_PATH>"` (and the ID, issuer) were passed
    /// and xcodebuild failed on them. With the key, its three values go; with part of it, the
    /// missing ones show.
    @Test func unsetAppStoreConnectValuesAreNotPassedToXcodebuild() throws {
        let flavour = Flavour(
            name: "modern", xcode: nil, archs: [.arm64], deploymentTarget: "17.0", sdk: "iphoneos",
            configuration: "Release", scheme: nil, settings: [:],
            location: SourceLocation(file: "devices.yaml", line: 1))
        let version = GitVersion(
            marketingVersion: "1.0", buildNumber: 1, tag: nil, commitsSinceTag: 1, dirty: false,
            shallow: false)
        func arguments(_ variables: [String: String]) -> [String] {
            BuildCommandBuilder(variables: variables, version: version).xcodebuild(flavour).arguments
        }
        let none = arguments(["APPLE_TEAM_ID": "ABCDE12345", "ASC_KEY_PATH": ""])
        #expect(none.contains("-allowProvisioningUpdates"))
        #expect(!none.contains { $0.hasPrefix("-authentication") || $0.contains("<unset") }, "\(none)")

        let all = arguments(["ASC_KEY_PATH": "/k/AuthKey.p8", "ASC_KEY_ID": "KEY", "ASC_ISSUER_ID": "ISS"])
        #expect(all.contains("-authenticationKeyPath") && all.contains("/k/AuthKey.p8"))
        #expect(all.contains("-authenticationKeyIssuerID") && all.contains("ISS"))

        let part = arguments(["ASC_KEY_PATH": "/k/AuthKey.p8"])
        #expect(part.contains("<unset: ASC_KEY_ID>") && part.contains("<unset: ASC_ISSUER_ID>"))
    }

    @Test func macArgumentVectors() {
        let mac = MacCommands()
        #expect(mac.productVersion().arguments == ["-productVersion"])
        #expect(
            mac.copy("/b/HA Dashboard.app", to: "/i/HA Dashboard.app").arguments == [
                "/b/HA Dashboard.app", "/i/HA Dashboard.app",
            ])
        #expect(
            mac.exportDefaults("com.hadashboard.app").arguments == ["export", "com.hadashboard.app", "-"])
        let imported = mac.importDefaults(
            "com.hadashboard.app", plist: Data("<plist/>".utf8), secrets: ["tok"])
        #expect(imported.arguments == ["import", "com.hadashboard.app", "-"])
        #expect(imported.standardInput == Data("<plist/>".utf8))
        #expect(
            mac.quit("com.hadashboard.app").arguments == [
                "-e",
                "if application id \"com.hadashboard.app\" is running then tell application id \"com.hadashboard.app\" to quit",
            ])
        #expect(mac.kill("HA Dashboard").arguments == ["HA Dashboard"])
        #expect(mac.open("/i/HA Dashboard.app").executable == "open")
    }

    @Test func simctlLaunchPassesEnvironmentAsSimctlChildAndRedactsSecrets() {
        let command = SimctlCommands(developerDir: "/Applications/Xcode.app/Contents/Developer").launch(
            udid, bundleID: "com.example.hadashboard",
            arguments: ["-HAServerURL", "http://ha:8123", "-HAAccessToken", "tok-123"],
            environment: ["HA_DEPLOY_ID": "d-42"], secrets: ["tok-123"])
        #expect(
            command.arguments == [
                "simctl", "launch", "--terminate-running-process", udid, "com.example.hadashboard",
                "-HAServerURL",
                "http://ha:8123", "-HAAccessToken", "tok-123",
            ])
        #expect(
            command.environment == [
                "SIMCTL_CHILD_HA_DEPLOY_ID": "d-42",
                "DEVELOPER_DIR": "/Applications/Xcode.app/Contents/Developer",
            ])
        #expect(!command.description.contains("tok-123"))
        #expect(command.description.contains("***"))
    }

    @Test func rosettaSimArgumentVectors() {
        let tool = RosettaSimCommands(executable: "/opt/rosetta/rosettasim-ctl")
        #expect(tool.listDevices().executable == "/opt/rosetta/rosettasim-ctl")
        #expect(tool.listDevices().arguments == ["list", "-j", "devices"])
        #expect(tool.boot(udid).arguments == ["boot", udid])
        #expect(tool.install(udid, app: "/b/App.app").arguments == ["install", udid, "/b/App.app"])
        #expect(tool.launch(udid, bundleID: "com.e.app").arguments == ["launch", udid, "com.e.app"])
        #expect(tool.terminate(udid, bundleID: "com.e.app").arguments == ["terminate", udid, "com.e.app"])
        #expect(tool.screenshot(udid, to: "/tmp/s.png").arguments == ["screenshot", udid, "/tmp/s.png"])
    }

    @Test func devicectlArgumentVectors() {
        let tool = DevicectlCommands()
        let device = "00008020-000A1B2C3D4E002E"
        #expect(
            tool.listDevices(jsonOutput: "/t/o.json", timeout: 30).arguments == [
                "devicectl", "list", "devices", "--json-output", "/t/o.json", "--timeout", "30",
            ])
        #expect(
            tool.infoDetails(device: device, jsonOutput: "/t/o.json", timeout: 30).arguments == [
                "devicectl", "device", "info", "details", "--device", device, "--json-output", "/t/o.json",
                "--timeout", "30",
            ])
        #expect(
            tool.installApp(device: device, app: "/b/HA Dashboard.app", jsonOutput: "/t/o.json", timeout: 95)
                .arguments == [
                    "devicectl", "device", "install", "app", "--device", device, "--json-output", "/t/o.json",
                    "--timeout", "95", "/b/HA Dashboard.app",
                ])
        let launch = tool.launch(
            device: device, bundleID: "com.example.hadashboard", arguments: ["-HAAccessToken", "tok-123"],
            jsonOutput: "/t/o.json", timeout: 60, secrets: ["tok-123"])
        #expect(
            launch.arguments == [
                "devicectl", "device", "process", "launch", "--device", device, "--terminate-existing",
                "--json-output", "/t/o.json", "--timeout", "60", "com.example.hadashboard", "--",
                "-HAAccessToken",
                "tok-123",
            ])
        #expect(!launch.description.contains("tok-123"))
        #expect(
            tool.launch(device: device, bundleID: "com.e.app", arguments: [], jsonOutput: "/o", timeout: 60)
                .arguments.suffix(1) == ["com.e.app"])
        #expect(
            tool.signal(device: device, pid: 7401, jsonOutput: "/t/o.json", timeout: 20).arguments == [
                "devicectl", "device", "process", "signal", "--device", device, "--pid", "7401", "--signal",
                "SIGTERM",
                "--json-output", "/t/o.json", "--timeout", "20",
            ])
        #expect(
            tool.copyCrashLogs(device: device, destination: "/t/c", jsonOutput: "/t/o.json", timeout: 60)
                .arguments
                == [
                    "devicectl", "device", "copy", "from", "--device", device, "--domain-type",
                    "systemCrashLogs",
                    "--source", ".", "--destination", "/t/c", "--json-output", "/t/o.json", "--timeout", "60",
                ])
    }

    @Test func pymobiledevice3ArgumentVectors() {
        let tool = PyMobileDevice3Commands()
        let udid = "00008140-001C2D3E4F50801C"
        #expect(tool.listDevices().executable == "pymobiledevice3")
        #expect(tool.version().arguments == ["version"])
        #expect(tool.listDevices().arguments == ["usbmux", "list"])
        #expect(tool.listApps(udid: udid).arguments == ["apps", "list", "--udid", udid])
        #expect(
            tool.install(udid: udid, app: "/b/HA.ipa").arguments == [
                "apps", "install", "--udid", udid, "/b/HA.ipa",
            ])
        #expect(tool.autoMount(udid: udid).arguments == ["mounter", "auto-mount", "--udid", udid])
        #expect(
            tool.screenshot(udid: udid, to: "/t/s.png").arguments == [
                "developer", "dvt", "screenshot", "--userspace", "--udid", udid, "/t/s.png",
            ])
        #expect(
            tool.screenshot(udid: udid, to: "/t/s.png", route: .tunneld).arguments == [
                "developer", "dvt", "screenshot", "--tunnel", udid, "/t/s.png",
            ])
        #expect(
            tool.lookupPersonalized(udid: udid).arguments == [
                "mounter", "lookup", "Personalized", "--udid", udid,
            ])
        #expect(
            tool.pullCrashReports(udid: udid, into: "/t/c").arguments == [
                "crash", "pull", "--udid", udid, "/t/c",
            ])
    }

    /// dvt launch splits its one RUN_COMMAND string with shlex: values with spaces or quotes must survive.
    @Test func pymobiledevice3LaunchQuotesForShlex() throws {
        let arguments = ["-HADashboard", "Living room", "-HAAccessToken", "tok'123", "-HAKioskMode", "YES"]
        let expected = [
            "developer", "dvt", "launch", "--userspace", "--udid", "U1", "--kill-existing",
            "com.example.hadashboard -HADashboard 'Living room' -HAAccessToken 'tok'\"'\"'123' -HAKioskMode YES",
        ]
        let tool = PyMobileDevice3Commands()
        #expect(
            tool.launchArgv(udid: "U1", bundleID: "com.example.hadashboard", arguments: arguments) == expected
        )
        // The launch itself carries that list on stdin; its own arguments name only the script.
        let command = tool.launch(
            udid: "U1", bundleID: "com.example.hadashboard", arguments: arguments, secrets: ["tok'123"],
            interpreter: ["/usr/bin/env", "python3"], script: "/venv/bin/pymobiledevice3")
        #expect(command.executable == "/usr/bin/env")
        #expect(command.arguments.first == "python3")
        #expect(command.arguments.last == "/venv/bin/pymobiledevice3")
        #expect(!command.arguments.joined().contains("tok"))
        let stdin = try #require(command.standardInput)
        #expect(try JSONSerialization.jsonObject(with: stdin) as? [String] == expected)
    }
}

/// The quoting checked against Python's real `shlex.split`, which pymobiledevice3 applies.
@Suite struct ShlexDifferentialTests {
    @Test func pythonShlexGivesTheArgumentsBack() async throws {
        let words = [
            "com.example.hadashboard", "-HADashboard", "Living room", "-HAServerURL",
            "http://ha.local:8123/x?a=1&b=2",
            "-Quote", "it's \"here\"", "-Empty", "", "-Unicode", "Küche €", "-Shell",
            "$(rm -rf /) `x` \\ ; |",
        ]
        let line = try #require(
            PyMobileDevice3Commands().launchArgv(
                udid: "U", bundleID: words[0], arguments: Array(words.dropFirst())
            )
            .last)
        let output = try await TestHost.runner.checked(
            ProcessCommand(
                "python3",
                ["-c", "import json, shlex, sys; print(json.dumps(shlex.split(sys.argv[1])))", line]),
            timeout: .seconds(60))
        let decoded = try JSONDecoder().decode([String].self, from: output.standardOutput)
        #expect(decoded == words)
    }
}
