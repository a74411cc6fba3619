import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployStatus
import HomeAssistant
import TestSupport
import Testing
import VirtualDevice

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The wall fleet operated from the real Home Assistant 2024.3.3 (issue 50): `status --every
/// --publish --commands` on the same loopback Mosquitto as Home Assistant's MQTT integration. A
/// button pressed through Home Assistant's own API relaunches the twin's app; a retained or unknown
/// command does nothing; the update entity offers the newer build of --artifacts and its Install,
/// called through Home Assistant, puts it on the twin, and Home Assistant's installed version follows.
@Suite(.serialized)
struct FleetCommandsHomeAssistantTests {
    @Test func buttonsAndTheUpdateEntityActOnTheTwinAndNothingElseDoes() async throws {
        let ha = try await HomeAssistantServer.start(packages: [:])
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        do {
            try await run(ha: ha, mosquitto: mosquitto)
        } catch {
            try? await ha.discard()
            throw error
        }
        try await ha.discard()
    }

    /// devices.yaml `watchdog: {after: 1, per_hour: 1}`: the app the twin killed is relaunched at the
    /// next round, as the Relaunch button would, and the Last command sensor says who did it; killed
    /// again within the hour it is left, and that is said once.
    @Test func theWatchdogRelaunchesAKilledAppAndStopsAtItsLimit() async throws {
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        var twin = DeployWorld.defaultTwins[1]
        twin.extra = ["watchdog: {after: 1, per_hour: 1}"]
        let world = try await DeployWorld(twins: [twin])
        defer { Task { await world.shutdown() } }
        try StatusPublishEndToEndTests.setBroker(mosquitto.url, in: world)
        let udid = try #require(world.udids["mini4"])
        let deploy = try await world.deploy(["mini4", "--no-build", "--artifacts", "artifacts"])
        #expect(deploy.status == 0, "\(deploy.stderr)")
        let service = try await world.service([
            "status", "mini4", "--artifacts", "artifacts", "--timeout", "5", "--publish", "--every", "10s",
            "--commands",
        ])
        defer { service.stop() }
        #expect(
            try await service.line(containing: "published 1 device(s)", within: 60) != nil,
            "\(service.output)")
        #expect(try await world.usbmuxd.appLaunches(udid: udid) == 1, "a running app is left alone")

        try await world.usbmuxd.killApp(udid: udid)
        #expect(
            try await service.line(
                containing: "relaunch from the watchdog (1 of 1 this hour): succeeded", within: 90)
                != nil, "\(service.output)")
        #expect(try await world.usbmuxd.appLaunches(udid: udid) == 2)
        let node = FleetDiscovery.node(udid: udid, id: "mini4")
        let said = try await mosquitto.retainedText("hadeploy/\(node)/last_command").values.first
        #expect(
            said?.hasPrefix("relaunch by the watchdog (1 of 1 this hour): succeeded") == true, "\(said ?? "")"
        )

        try await world.usbmuxd.killApp(udid: udid)
        #expect(
            try await service.line(
                containing: "watchdog: not relaunched — 1 relaunch(es) in the last hour", within: 60)
                != nil, "\(service.output)")
        #expect(try await world.usbmuxd.appLaunches(udid: udid) == 2, "the limit holds")
        #expect(service.terminate(within: 30) == 0, "\(service.output)")
    }

    /// Two hosts, one broker (Home Assistant's): each service acts on its own devices only, and a
    /// device both put in their devices.yaml is said by both (each would act on its commands).
    @Test func twoServicesOnOneBrokerEachActOnlyOnTheirOwnDeviceAndAShareIsSaid() async throws {
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        let hall = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await hall.shutdown() } }
        let kitchen = try await DeployWorld(twins: [DeployWorld.defaultTwins[2]])
        defer { Task { await kitchen.shutdown() } }
        let mini4 = try #require(hall.udids["mini4"])
        let kitchenUDID = try #require(kitchen.udids["kitchen"])
        var services: [BackgroundCommand] = []
        defer { for service in services { service.stop() } }
        for (world, id) in [(hall, "mini4"), (kitchen, "kitchen")] {
            try StatusPublishEndToEndTests.setBroker(mosquitto.url, in: world)
            let deploy = try await world.deploy([id, "--no-build", "--artifacts", "artifacts"])
            #expect(deploy.status == 0, "\(deploy.stderr)")
            let service = try await world.service([
                "status", "all", "--artifacts", "artifacts", "--timeout", "5", "--publish", "--every", "10s",
                "--commands",
            ])
            services.append(service)
            #expect(
                try await service.line(containing: "taking commands from Home Assistant", within: 60) != nil,
                "\(service.output)")
        }
        // Relaunch the hall's iPad: the hall's service does it, the kitchen's does nothing.
        try await mosquitto.publish(
            "hadeploy/\(FleetDiscovery.node(udid: mini4, id: "mini4"))/command/relaunch", "PRESS")
        #expect(
            try await services[0].line(containing: "relaunch from Home Assistant: succeeded", within: 120)
                != nil,
            "\(services[0].output)")
        #expect(try await hall.usbmuxd.appLaunches(udid: mini4) == 2)
        #expect(try await kitchen.usbmuxd.appLaunches(udid: kitchenUDID) == 1)
        #expect(!services[1].output.contains("relaunch"), "\(services[1].output)")

        // The kitchen's devices.yaml gets the hall's iPad too: both services say so.
        try kitchen.addDevice(
            id: "hall",
            lines: [
                "product_type: iPad5,1", "ios: \"15.8\"", "arch: arm64", "flavour: modern", "transport: usb",
                "udid: \(mini4)",
            ])
        for service in services {
            #expect(
                try await service.line(containing: "is claimed by another host too", within: 60) != nil,
                "\(service.output)")
        }
        #expect(
            services[1].output.contains("warning: hall is claimed by another host too"),
            "\(services[1].output)")
        #expect(
            services[0].output.contains("warning: mini4 is claimed by another host too"),
            "\(services[0].output)")
    }

    /// A service called through Home Assistant's REST API, as a dashboard's button does.
    static func call(_ ha: HomeAssistantServer, _ service: String, _ entity: String) async throws {
        var request = try StatusPublishHomeAssistantTests.request(ha, "api/services/\(service)")
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: ["entity_id": entity])
        let (data, response) = try await URLSession.shared.data(for: request)
        let code = (response as? HTTPURLResponse)?.statusCode ?? 0
        try #require(code == 200, "\(service): \(code) \(String(decoding: data, as: UTF8.self))")
    }

    func run(ha: HomeAssistantServer, mosquitto: MosquittoBroker) async throws {
        try await StatusPublishHomeAssistantTests.setUpMQTT(ha: ha, mosquitto: mosquitto)
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]], ha: ha)
        defer { Task { await world.shutdown() } }
        try StatusPublishEndToEndTests.setBroker(mosquitto.url, in: world)
        let udid = try #require(world.udids["mini4"])
        let deploy = try await world.deploy(["mini4", "--no-build", "--artifacts", "artifacts"])
        #expect(deploy.status == 0, "\(deploy.stderr)")
        #expect(try await world.usbmuxd.appLaunches(udid: udid) == 1)

        // A press the broker kept (retained) is handed to every new subscriber: the service, starting,
        // gets it and does not act on it; nor on a command it does not know.
        let relaunchTopic = "hadeploy/\(FleetDiscovery.node(udid: udid, id: "mini4"))/command/relaunch"
        try await mosquitto.publish(relaunchTopic, "PRESS", retain: true)
        let service = try await world.service([
            "status", "mini4", "--artifacts", "artifacts", "--timeout", "5", "--publish", "--every", "10s",
            "--commands",
        ])
        defer { service.stop() }
        #expect(
            try await service.line(containing: "taking commands from Home Assistant", within: 60) != nil,
            "\(service.output)")
        #expect(
            try await service.line(containing: "a retained relaunch command was not acted on", within: 20)
                != nil,
            "\(service.output)")
        try await mosquitto.publish(relaunchTopic, "", retain: true)
        try await mosquitto.publish(
            relaunchTopic.replacingOccurrences(of: "relaunch", with: "erase"), "PRESS")
        #expect(
            try await service.line(containing: "(erase) was not acted on", within: 20) != nil,
            "\(service.output)")
        let connection = try await ha.connected()
        defer { Task { await connection.close() } }
        let entities = [
            "button.hadeploy_mini4_relaunch", "button.hadeploy_mini4_redeploy",
            "button.hadeploy_mini4_refresh",
            "update.hadeploy_mini4_app",
        ]
        let shown = try await StatusPublishHomeAssistantTests.states(connection, until: entities)
        for entity in entities { #expect(shown[entity] != nil, "\(entity) in Home Assistant") }
        // The installed build is the configured one: nothing to install.
        #expect(shown["update.hadeploy_mini4_app"]?["state"]?.stringValue == "off", "\(shown)")
        #expect(
            shown["update.hadeploy_mini4_app"]?["attributes"]?["installed_version"]?.stringValue
                == "1.2.0 (2)")
        #expect(try await world.usbmuxd.appLaunches(udid: udid) == 1, "nothing was launched")

        // Relaunch, pressed in Home Assistant: launched again, no install, the sensor says how it went.
        try await Self.call(ha, "button/press", "button.hadeploy_mini4_relaunch")
        #expect(
            try await service.line(containing: "relaunch from Home Assistant: succeeded", within: 120) != nil,
            "\(service.output)")
        #expect(try await world.usbmuxd.appLaunches(udid: udid) == 2)
        let last = try await StatusPublishHomeAssistantTests.states(
            connection, until: ["sensor.hadeploy_mini4_last_command"]
        ) { _, state in state.hasPrefix("relaunch: succeeded") }
        #expect(
            last["sensor.hadeploy_mini4_last_command"]?["state"]?.stringValue?.hasPrefix(
                "relaunch: succeeded")
                == true, "\(last["sensor.hadeploy_mini4_last_command"] ?? .null)")

        // Screenshot, pressed in Home Assistant: the twin's screen now is the device's image entity.
        try await Self.call(ha, "button/press", "button.hadeploy_mini4_screenshot")
        #expect(
            try await service.line(containing: "screenshot from Home Assistant: taken", within: 90) != nil,
            "\(service.output)")
        let kept = try Data(contentsOf: world.root.appendingPathComponent(".hadeploy/deployed/mini4.png"))
        #expect(kept.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        var shownImage = Data()
        for _ in 0..<60 {
            // Not there before the first screenshot (the deploy kept none): no 200 until it is.
            let (data, response) = try await URLSession.shared.data(
                for: try StatusPublishHomeAssistantTests.request(
                    ha, "api/image_proxy/image.hadeploy_mini4_screenshot"))
            if (response as? HTTPURLResponse)?.statusCode == 200 { shownImage = data }
            if shownImage == kept { break }
            try await TestHost.clock.sleep(for: .milliseconds(500))
        }
        #expect(shownImage == kept, "Home Assistant shows the screenshot taken")
        #expect(try await world.usbmuxd.appLaunches(udid: udid) == 2, "a screenshot launches nothing")

        // A newer build in --artifacts: Home Assistant offers it, with its tag's notes and release page
        // (an annotated tag, a GitHub origin); Install puts it on the twin.
        for git in [
            ["tag", "-a", "v1.2.1", "-m", "Kitchen fixes: the hallway card loads again"],
            ["remote", "add", "origin", "git@github.com:ha-dashboard/ios-app.git"],
        ] {
            _ = try await TestHost.runner.checked(
                ProcessCommand(
                    "git", git,
                    environment: [
                        "GIT_COMMITTER_NAME": "hadeploy test", "GIT_COMMITTER_EMAIL": "test@example.com",
                    ],
                    workingDirectory: world.root.path), timeout: .seconds(30))
        }
        let artifacts = world.root.appendingPathComponent("artifacts")
        try FileManager.default.removeItem(at: artifacts)
        for name in ["legacy", "modern"] {
            var flavour = DeployWorld.modernFlavour
            flavour.name = name
            _ = try DemoAppBuilder().build(
                flavour: flavour, marketingVersion: "1.2.1", buildNumber: 3, into: artifacts, devices: [udid],
                now: Date(), in: TestHost.fileSystem)
        }
        let offered = try await StatusPublishHomeAssistantTests.states(
            connection, until: ["update.hadeploy_mini4_app"]
        ) { _, state in state == "on" }
        let offer = offered["update.hadeploy_mini4_app"]?["attributes"]
        #expect(offer?["latest_version"]?.stringValue == "1.2.1 (3)", "\(offer ?? .null)")
        #expect(offer?["release_summary"]?.stringValue == "Kitchen fixes: the hallway card loads again")
        #expect(
            offer?["release_url"]?.stringValue
                == "https://github.com/ha-dashboard/ios-app/releases/tag/v1.2.1")
        try await Self.call(ha, "update/install", "update.hadeploy_mini4_app")
        #expect(
            try await service.line(containing: "install from Home Assistant: succeeded", within: 180) != nil,
            "\(service.output)")
        let installed = try await world.usbmuxd.installedApps(udid: udid).first {
            $0.bundleIdentifier == "com.example.hadashboard"
        }
        #expect(
            installed?.shortVersion == "1.2.1" && installed?.bundleVersion == "3",
            "\(String(describing: installed))")
        let followed = try await StatusPublishHomeAssistantTests.states(
            connection, until: ["update.hadeploy_mini4_app"]
        ) { _, state in state == "off" }
        #expect(
            followed["update.hadeploy_mini4_app"]?["attributes"]?["installed_version"]?.stringValue
                == "1.2.1 (3)",
            "\(followed["update.hadeploy_mini4_app"] ?? .null)")

        // SIGTERM, as systemd stops it: exit 0; no secret in anything it printed.
        #expect(service.terminate(within: 30) == 0, "\(service.output)")
        #expect(!service.output.contains(mosquitto.password) && !service.output.contains(ha.token))
    }
}
