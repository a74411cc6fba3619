import Foundation
import TestSupport
import Testing

/// `hadeploy init` in a repository shaped like the HA Dashboard app: an XcodeGen project.yml with
/// the placeholders regen.sh substitutes and only Debug and Release, the old scripts' .env.example
/// keys, `v*` tags, real git. Then the everyday commands work on what init wrote.
@Suite struct InitCommandTests {
    /// An XcodeGen spec written for this test in the app's shape (not the app's file).
    static let projectSpec = """
        name: HADashboard
        options:
          bundleIdPrefix: com.example.hadashboard
          deploymentTarget:
            iOS: "9.0"
        settings:
          base:
            TARGETED_DEVICE_FAMILY: "1,2"
            ARCHS: "arm64"
        targets:
          HADashboard:
            type: application
            platform: iOS
            supportedDestinations: [iOS, macCatalyst]
            sources:
              - path: HADashboard
            info:
              path: HADashboard/Info.plist
              properties:
                CFBundleShortVersionString: "$(MARKETING_VERSION)"
                CFBundleVersion: "$(CURRENT_PROJECT_VERSION)"
            settings:
              base:
                PRODUCT_BUNDLE_IDENTIFIER: com.example.hadashboard
                PRODUCT_NAME: "HA Dashboard"
                CODE_SIGN_STYLE: "Automatic"
                DEVELOPMENT_TEAM: ""   # regen.sh fills this in
                MARKETING_VERSION: "0.0.0"
              configs:
                Debug:
                  GCC_OPTIMIZATION_LEVEL: "0"
                Release:
                  GCC_OPTIMIZATION_LEVEL: "s"
          HADashboardTests:
            type: bundle.unit-test
            platform: iOS
            settings:
              base:
                PRODUCT_BUNDLE_IDENTIFIER: com.example.hadashboard.tests

        """

    /// The keys the app's old .env.example lists, in its own layout (inline comments, blank values).
    static let oldEnvExample = """
        # Copy this file to .env and fill in your values
        APPLE_TEAM_ID=           # Team ID
        ASC_KEY_ID=
        ASC_ISSUER_ID=
        ASC_KEY_PATH=            # ~/private_keys/AuthKey_XXXX.p8
        HA_SERVER=               # e.g. http://192.168.1.100:8123
        HA_TOKEN=
        HA_DASHBOARD=living-room
        BUNDLE_ID=
        IPHONE_UDID=
        IPHONE_DEVICECTL_ID=
        IPAD_MINI5_UDID=
        IPAD_MINI5_DEVICECTL_ID=
        IPAD_MINI4_UDID=
        IPAD2_UDID=
        # SIM_IPAD_NAME=iPad (10th generation)
        # SIM_IPHONE_NAME=iPhone 15 Pro
        IPAD2_IP=
        IPAD2_SSH_PASS=alpine
        UNRAID_HOST=
        UNRAID_USER=root
        UNRAID_PASS=

        """

    static let token = "init-test-token-5f2a9c"

    func appRepository() async throws -> Project {
        let project = try await Project(commits: 1, copyProjectFiles: false)
        try project.write(Self.projectSpec, to: "project.yml")
        try project.write(Self.oldEnvExample, to: ".env.example")
        try project.write("#!/bin/bash\necho building \"$1\" >&2\n", to: "scripts/build.sh")
        try project.write("int main(void) { return 0; }\n", to: "HADashboard/main.m")
        try project.write("build/\n.DS_Store\n", to: ".gitignore")
        try await project.shell(
            "chmod +x scripts/build.sh && git add -A && git commit -qm 'the app' && git tag v1.2.4 "
                + "&& git commit -q --allow-empty -m fix && git tag v1.2.5 "
                + "&& git commit -q --allow-empty -m next")
        return project
    }

    @Test func initThenVersionRenderAndPlanFitTheApp() async throws {
        let project = try await appRepository()
        let initial = try await project.run("init", "--no-scan")
        #expect(initial.status == 0, "\(initial.stderr)")
        for line in [
            "created          devices.yaml", "created          Templates/project.yml.mustache",
            "created          Templates/ExportOptions.plist.mustache",
            "appended to      .env.example", "appended to      .gitignore",
        ] {
            #expect(initial.stdout.contains(line), "\(initial.stdout)")
        }
        #expect(
            initial.stdout.contains(
                "Fill in .env (cp .env.example .env): BUNDLE_ID, APPLE_TEAM_ID, HA_SERVER"))

        // The template is the project's own spec with regen.sh's two substitutions as variables.
        let template = try project.read("Templates/project.yml.mustache")
        #expect(template.contains("  bundleIdPrefix: {{BUNDLE_ID}}\n"))
        #expect(template.contains("        PRODUCT_BUNDLE_IDENTIFIER: {{BUNDLE_ID}}\n"))
        #expect(template.contains("        PRODUCT_BUNDLE_IDENTIFIER: {{{BUNDLE_ID}}}.tests\n"))
        #expect(template.contains("        DEVELOPMENT_TEAM: {{APPLE_TEAM_ID}}   # regen.sh fills this in\n"))
        #expect(!template.contains("com.example.hadashboard"))
        #expect(template.contains("        PRODUCT_NAME: \"HA Dashboard\"\n"), "other lines unchanged")
        // The app's .env.example keeps every line; only keys it lacks are added, once.
        let envExample = try project.read(".env.example")
        #expect(envExample.hasPrefix(Self.oldEnvExample))
        #expect(envExample.contains("\nIPAD4_IP=\n"))
        #expect(!envExample.dropFirst(Self.oldEnvExample.count).contains("IPAD2_IP="))
        #expect(!envExample.dropFirst(Self.oldEnvExample.count).contains("SIM_IPAD_NAME="))
        #expect(try project.read(".gitignore").contains("Generated/\n"))

        // The user's old .env, unchanged, drives everything.
        try project.write(
            """
            BUNDLE_ID=com.hadashboard.app
            APPLE_TEAM_ID=
            HA_SERVER=http://ha.local:8123
            HA_TOKEN=\(Self.token)
            HA_DASHBOARD=living-room
            IPAD2_IP=192.168.1.20
            IPAD2_SSH_PASS=alpine
            IPAD_MINI4_UDID=00008020-0004
            IPAD_MINI5_DEVICECTL_ID=5A5A5A5A-0005
            UNRAID_HOST=nas.local

            """, to: ".env")
        let version = try await project.run("version")
        #expect(version.stdout == "1.2.5 (4)\n", "\(version.stderr)")
        let render = try await project.run("render")
        #expect(render.status == 0, "\(render.stderr)")
        let generated = try project.read("Generated/project.yml")
        #expect(generated.contains("        PRODUCT_BUNDLE_IDENTIFIER: com.hadashboard.app.tests\n"))
        #expect(generated.contains("        DEVELOPMENT_TEAM: \"\"   # regen.sh fills this in\n"))
        #expect(try project.read("Generated/ExportOptions.plist").contains("<key>teamID</key>"))
        let check = try await project.run("render", "--check")
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")

        let result = try await project.run("plan", "all", "sims", "--json", "--as-host", "macos")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains(Self.token) && !result.stdout.contains("alpine"))
        let plan = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let builds = try #require(plan["builds"] as? [[String: Any]])
        func build(_ flavour: String) throws -> (
            arguments: [String], executable: String, environment: [String: String]
        ) {
            let entry = try #require(builds.first { $0["flavour"] as? String == flavour }, "\(flavour)")
            let commands = try #require(entry["commands"] as? [[String: Any]])
            let last = try #require(commands.last)
            return (
                last["arguments"] as? [String] ?? [], last["executable"] as? String ?? "",
                last["environment"] as? [String: String] ?? [:]
            )
        }
        func configuration(_ arguments: [String]) -> String? {
            arguments.firstIndex(of: "-configuration").map { arguments[$0 + 1] }
        }
        // As the app's script: one universal build for every physical device, none for the App Store.
        #expect(
            builds.compactMap { $0["flavour"] as? String }.sorted() == [
                "legacy", "mac", "rosettasim", "simulator",
            ])
        #expect(try configuration(build("simulator").arguments) == "Debug")
        let rosetta = try build("rosettasim")
        #expect(configuration(rosetta.arguments) == "Debug")
        #expect(rosetta.arguments.contains("MERGED_BINARY_TYPE=none"))
        #expect(rosetta.arguments.contains("ENABLE_DEBUG_DYLIB=NO"))
        #expect(rosetta.arguments.contains("ARCHS=x86_64"))
        #expect(rosetta.environment["DEVELOPER_DIR"] == "/Applications/Xcode.app/Contents/Developer")
        // The armv7 build is the app's own recipe, with hadeploy's version in its environment.
        let legacy = try build("legacy")
        #expect(legacy.executable == "scripts/build.sh")
        #expect(legacy.arguments == ["device"])
        #expect(legacy.environment["MARKETING_VERSION"] == "1.2.5")
        #expect(legacy.environment["CURRENT_PROJECT_VERSION"] == "4")
        #expect(!result.stdout.contains("Legacy") && !result.stdout.contains("\"RosettaSim\""))

        // The old scripts' target names, and their per-device dashboards.
        let old = try await project.run(
            "plan", "ipad2", "ipad2-usb", "mini5", "mini4", "sim", "iphone", "sim-ios93", "sim-ios103",
            "--json", "--as-host", "macos")
        #expect(old.status == 0, "\(old.stderr)")
        let oldPlan = try #require(
            try JSONSerialization.jsonObject(with: Data(old.stdout.utf8)) as? [String: Any])
        let devices = try #require(oldPlan["devices"] as? [[String: Any]])
        #expect(
            devices.compactMap { $0["id"] as? String } == [
                "ipad2", "ipad2-usb", "mini5", "mini4", "sim-iphone", "sim-ios93", "sim-ios103",
            ])
        let byID = Dictionary(uniqueKeysWithValues: devices.map { ($0["id"] as? String ?? "", $0) })
        func launch(_ id: String) -> [String: Any]? { byID[id]?["launch"] as? [String: Any] }
        #expect(launch("mini5")?["dashboard"] as? String == "dashboard-landing")
        #expect(launch("ipad2")?["dashboard"] as? String == "dashboard-office")
        #expect(launch("mini4")?["dashboard"] as? String == "living-room")
        #expect(byID["ipad2"]?["host"] as? String == "192.168.1.20")
        #expect(byID["mini5"]?["udid"] as? String == "5A5A5A5A-0005")
        let usbBackend = byID["ipad2-usb"]?["backend"] as? [String: Any]
        #expect(usbBackend?["usbmuxd"] as? String == "ssh://root@nas.local", "the Unraid server's usbmuxd")
        #expect(launch("ipad2")?["kiosk"] as? Bool == true, "as the old scripts sent to the jailbroken iPads")
        #expect(launch("mini4")?["kiosk"] == nil, "absent: the app keeps the device's own setting")
        // The old script's `ideviceinstaller -n`: the iPad mini 4 is reached over Wi-Fi.
        let mini4Backend = byID["mini4"]?["backend"] as? [String: Any]
        #expect(mini4Backend?["lookup"] as? String == "network", "\(mini4Backend ?? [:])")
    }

    /// The app as it is today (1.3; its project.yml at 031bcd1, in this test's own words): the real
    /// bundle id written literally, the Mac build's entitlements for the macOS SDK only. `init`
    /// makes the template of it, and the matrix it writes is today's script's: `all` is the fleet
    /// with the iPad Pro (found by model when IPAD_PRO_DEVICECTL_ID is unset), on one universal build.
    @Test func initOnTodaysAppGivesTodaysFleet() async throws {
        let project = try await Project(commits: 1, copyProjectFiles: false)
        let spec = Self.projectSpec.replacingOccurrences(
            of: "com.example.hadashboard", with: "com.hadashboard.app"
        )
        .replacingOccurrences(
            of: "        MARKETING_VERSION: \"0.0.0\"\n",
            with: "        MARKETING_VERSION: \"0.0.0\"\n"
                + "        \"CODE_SIGN_ENTITLEMENTS[sdk=macosx*]\": HADashboard/HADashboard-Catalyst.entitlements\n"
        )
        try project.write(spec, to: "project.yml")
        try project.write(Self.oldEnvExample, to: ".env.example")
        try project.write("#!/bin/bash\necho building \"$1\" >&2\n", to: "scripts/build.sh")
        try await project.shell(
            "chmod +x scripts/build.sh && git add -A && git commit -qm 'the app' && git tag v1.3.0")
        let initial = try await project.run("init", "--no-scan")
        #expect(initial.status == 0, "\(initial.stderr)")
        let template = try project.read("Templates/project.yml.mustache")
        #expect(template.contains("        PRODUCT_BUNDLE_IDENTIFIER: {{BUNDLE_ID}}\n"), "\(template)")
        #expect(template.contains("        PRODUCT_BUNDLE_IDENTIFIER: {{{BUNDLE_ID}}}.tests\n"))
        #expect(
            template.contains(
                "        \"CODE_SIGN_ENTITLEMENTS[sdk=macosx*]\": HADashboard/HADashboard-Catalyst.entitlements\n"
            ))
        #expect(try project.read(".env.example").contains("\nIPAD_PRO_DEVICECTL_ID=\n"))

        try project.write("BUNDLE_ID=com.hadashboard.app\nHA_SERVER=http://ha.local:8123\n", to: ".env")
        let result = try await project.run("plan", "all", "--json", "--as-host", "macos")
        #expect(result.status == 0, "\(result.stderr)")
        let plan = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let devices = try #require(plan["devices"] as? [[String: Any]])
        #expect(
            devices.compactMap { $0["id"] as? String } == [
                "iphone", "mini5", "mini4", "ipad4", "ipadpro", "mac",
            ])
        let builds = try #require(plan["builds"] as? [[String: Any]])
        #expect(builds.compactMap { $0["flavour"] as? String }.sorted() == ["legacy", "mac"])
        let ipadpro = try #require(devices.first { $0["id"] as? String == "ipadpro" })
        let backend = try #require(ipadpro["backend"] as? [String: Any])
        #expect("\(backend)".contains("iPad Pro"), "found by its model: \(backend)")
        let text = try await project.run("plan", "ipadpro", "--as-host", "macos")
        #expect(text.stdout.contains("the one physical iPad Pro it lists"), "\(text.stdout)")
        #expect(text.stdout.contains("udid:      (none set: found when it connects)"), "\(text.stdout)")
    }

    @Test func initNeverOverwritesWithoutForce() async throws {
        let project = try await appRepository()
        #expect(try await project.run("init", "--no-scan").status == 0)
        try project.write("# my own matrix\n", to: "devices.yaml")
        let envBefore = try project.read(".env.example")

        let again = try await project.run("init", "--no-scan")
        #expect(again.status == 64)
        #expect(again.stdout == "")
        #expect(again.stderr.contains("devices.yaml already exists with other content; nothing was written"))
        #expect(again.stderr.contains("--force"))
        #expect(try project.read("devices.yaml") == "# my own matrix\n")
        #expect(try project.read(".env.example") == envBefore, "nothing appended twice")

        let dryRun = try await project.run("init", "--no-scan", "--dry-run")
        #expect(dryRun.status == 0)
        #expect(dryRun.stdout.contains("would replace    devices.yaml"))
        #expect(try project.read("devices.yaml") == "# my own matrix\n")

        let forced = try await project.run("init", "--no-scan", "--force")
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(forced.stdout.contains("replaced         devices.yaml"))
        #expect(forced.stdout.contains("unchanged        .env.example"))
        #expect(
            try project.read("devices.yaml")
                == (try String(
                    contentsOf: HADeployBinary.repositoryRoot.appendingPathComponent("devices.yaml"),
                    encoding: .utf8)))
    }

    @Test func withoutAProjectSpecItSaysWhereToRunIt() async throws {
        let project = try await Project(commits: 1, copyProjectFiles: false)
        let result = try await project.run("init", "--no-scan")
        #expect(result.status == 78)
        #expect(result.stderr.contains("no XcodeGen project.yml in "))
        #expect(result.stderr.contains("run `hadeploy init` in the app repository's root"))
        #expect(
            !FileManager.default.fileExists(atPath: project.url.appendingPathComponent("devices.yaml").path))
    }

    /// The device scan asks usbmuxd; without one it says so and still writes the files.
    @Test func theScanWithoutUsbmuxdIsANoteNotAFailure() async throws {
        let project = try await appRepository()
        let result = try await project.run(
            "init", environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:\(project.url.path)/no-usbmuxd.sock"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("note: usbmuxd:"), "\(result.stdout)")
        #expect(result.stdout.contains("created          devices.yaml"))
    }

    /// The devices this host sees, through a real usbmuxd protocol peer: hadeploy's virtual twins of
    /// the iPad mini 4 and the iPad 2 behind a virtual usbmuxd, listed by libimobiledevice.
    @Test func devicesOnUsbmuxdBecomeEnvLinesUnderTheOldKeys() async throws {
        let project = try await appRepository()
        #expect(try await project.run("init", "--no-scan").status == 0)
        let socket = project.url.appendingPathComponent("usbmuxd.sock")
        let virtual = Process()
        virtual.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        virtual.arguments =
            ["-i"] + HADeployBinary.baseEnvironment(home: project.url).map { "\($0.key)=\($0.value)" }
            + [try await HADeployBinary.path, "virtual", "--only", "mini4", "ipad2", "--socket", socket.path]
        virtual.currentDirectoryURL = project.url
        virtual.standardOutput = FileHandle.nullDevice
        virtual.standardError = FileHandle.nullDevice
        try virtual.run()
        defer {
            virtual.terminate()
            virtual.waitUntilExit()
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: socket.path), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(FileManager.default.fileExists(atPath: socket.path), "the virtual usbmuxd did not start")

        let result = try await project.run(
            "init", "--dry-run", environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:\(socket.path)"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Seen on this host (add to .env):"), "\(result.stdout)")
        let seen = result.stdout.split(separator: "\n").filter { $0.hasPrefix("  IPAD") }
        #expect(seen.count == 2, "\(result.stdout)")
        #expect(
            seen.contains {
                $0.hasPrefix("  IPAD_MINI4_UDID=") && $0.contains("# iPad mini 4, iOS 15.8, Wi-Fi")
            })
        #expect(seen.contains { $0.hasPrefix("  IPAD2_UDID=") && $0.contains("# iPad 2, iOS 9.3.5, USB") })
        #expect(!result.stdout.contains("note: usbmuxd:"))
    }
}
