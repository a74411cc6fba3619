import Foundation
import HomeAssistant
import ImageCodec
import NIOConcurrencyHelpers
import TestSupport
import Testing
import VirtualDevice

extension VirtualDeviceSuite {
    @Suite("the virtual HA Dashboard app against a real Home Assistant")
    struct VirtualAppTests {
        /// Everything for one run: HA with a saved dashboard, a virtual device with the app and the image.
        struct Setup {
            let ha: HomeAssistantServer
            let connection: HomeAssistantConnection
            let emulator: EmulatorFixture
            let udid: String
        }

        static func setUp() async throws -> Setup {
            let ha = try await HomeAssistantServer.start()
            let connection = HomeAssistantConnection(
                options: ClientOptions(
                    server: try ServerAddress(ha.url + "/"), token: AccessToken(ha.token),
                    clock: TestHost.clock))
            try await connection.connect()
            _ = try await connection.send(
                RawRequest("lovelace/dashboards/create", ["url_path": "wall-lobby", "title": "Lobby"]))
            _ = try await connection.send(
                RawRequest(
                    "lovelace/config/save",
                    [
                        "url_path": "wall-lobby",
                        "config": [
                            "title": "Lobby wall",
                            "views": [
                                [
                                    "title": "Main",
                                    "cards": [["type": "entities", "entities": ["input_boolean.peer_test"]]],
                                ],
                                ["title": "Energy", "cards": []],
                            ],
                        ],
                    ]))
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
            let udid = await emulator.udid("mini4")
            let app = try TestBundles.makeApp(
                in: emulator.directory.appendingPathComponent("build"), bundleID: "io.hadeploy.dashboard")
            #expect(try await emulator.run("ideviceinstaller", ["-u", udid, "-i", app.path]).status == 0)
            #expect(try await DeveloperServicesTests.mount(emulator, udid).status == 0)
            return Setup(ha: ha, connection: connection, emulator: emulator, udid: udid)
        }

        /// Runs `idevicedebug run` with `arguments` until the screen leaves "Connecting" (or 40 s),
        /// then interrupts it; returns the screen the app showed, its screenshot and the new part of
        /// its `Documents/ha-log.txt`.
        static func launch(_ setup: Setup, _ arguments: [String], settle: Duration = .milliseconds(500))
            async throws -> (screen: VirtualScreen, shot: Data, log: String)
        {
            let seen = NIOLockedValueBox<(VirtualScreen, Data)?>(nil)
            let daemon = setup.emulator.daemon
            let udid = setup.udid
            let logFile = try await daemon.appDataContainer(udid: udid, bundleIdentifier: bundleID)
                .appendingPathComponent("Documents/ha-log.txt")
            let before = (try? Data(contentsOf: logFile))?.count ?? 0
            let run = try await ToolRunner.run(
                "idevicedebug", ["-u", udid, "run", bundleID] + arguments,
                socket: setup.emulator.socket, timeout: 60,
                interruptWhen: {
                    guard let app = try? await daemon.runningApp(udid: udid),
                        app.screen.lines.first != "Connecting to" && app.screen.lines.first != "Starting..."
                    else { return false }
                    try? await Task.sleep(for: settle)
                    let shot = (try? await daemon.screenshot(udid: udid)) ?? Data()
                    let screen = (try? await daemon.runningApp(udid: udid))?.screen ?? app.screen
                    seen.withLockedValue { $0 = (screen, shot) }
                    return true
                })
            #expect(!run.timedOut, "\(run)")
            for argument in arguments where argument.count > 20 {
                #expect(!run.output.contains(argument), "the token never reaches the tool output")
            }
            let (screen, shot) = try #require(
                seen.withLockedValue { $0 }, "the app never showed a result: \(run)")
            let log = String(decoding: (try Data(contentsOf: logFile)).dropFirst(before), as: UTF8.self)
            return (screen, shot, log)
        }

        static let bundleID = "io.hadeploy.dashboard"

        func server(_ setup: Setup, token: String? = nil) -> [String] {
            ["-HAServerURL", setup.ha.url + "/", "-HAAccessToken", token ?? setup.ha.token]
        }

        @Test("behaves like HA Dashboard: its log, its fallback, its preferences, its mobile_app device")
        func realAppContract() async throws {
            let setup = try await Self.setUp()
            do {
                try await checkContract(setup)
            } catch {
                await Self.tearDown(setup)
                throw error
            }
            await Self.tearDown(setup)
        }

        static func tearDown(_ setup: Setup) async {
            await setup.connection.close()
            await setup.emulator.stop()
            try? await setup.ha.discard()
        }

        func checkContract(_ setup: Setup) async throws {
            let events = try await setup.connection.subscribe(to: DashboardLoadedEvent.eventType)
            let received = NIOLockedValueBox<Int>(0)
            let listener = Task {
                for try await _ in events { received.withLockedValue { $0 += 1 } }
            }
            defer { listener.cancel() }

            // A good launch: the real log lines, the dashboard's cards on screen, no event.
            let good = try await Self.launch(
                setup, server(setup) + ["-HADashboard", "wall-lobby", "-HAKioskMode", "NO"])
            #expect(!good.screen.isError, "\(good.screen)")
            #expect(good.screen.lines.first == "Lobby wall", "\(good.screen.lines)")
            #expect(good.screen.lines.contains("# Main"))
            #expect(good.screen.lines.contains("    Peer test switch: off"), "\(good.screen.lines)")
            #expect(good.log.contains("\n=== HA Dashboard log session ===\nDevice: iPad / iOS 15.8\nDate: "))
            for line in [
                " INFO [startup] NSUserDefaults read END (url=YES, token=YES)\n",
                " INFO [startup] isConfigured=YES\n",
                " INFO [conn] WebSocket authenticated\n",
                " INFO [conn] Lovelace config received: 2 views, 1 cards, strategy=none\n",
            ] {
                #expect(good.log.contains(line), "missing \(line) in \(good.log)")
            }
            #expect(!good.log.contains(setup.ha.token), "the log never holds the token")
            let image = try ImageCodec.decode(good.shot)
            #expect(image.color(x: 5, y: 200) == RGBImage.Color(red: 0x03, green: 0xA9, blue: 0xF4))

            // Kiosk mode is a setting the app keeps: a later launch without the key stays in kiosk mode.
            let kiosk = try await Self.launch(setup, server(setup) + ["-HAKioskMode", "YES"])
            #expect(kiosk.screen.kiosk && !kiosk.screen.isError)
            let kept = try await Self.launch(setup, [])
            #expect(kept.screen.kiosk, "HAKioskMode persists in the app's preferences")
            #expect(
                kept.screen.lines.first == "Lobby wall",
                "the saved server and dashboard are used: \(kept.screen)")
            #expect(
                try ImageCodec.decode(kept.shot).color(x: 5, y: 5)
                    == RGBImage.Color(red: 0xFA, green: 0xFA, blue: 0xFA))

            // A refused token: the app's own words, and an error on screen.
            let bad = try await Self.launch(
                setup, server(setup, token: "not-a-token-at-all-123456") + ["-HAKioskMode", "NO"])
            #expect(bad.screen.isError && bad.screen.lines.first == "Authentication failed", "\(bad.screen)")
            #expect(bad.log.contains("ERROR [conn] Auth failed: Authentication failed\n"), "\(bad.log)")

            // A dashboard the server does not have: the app logs the failure and shows its fallback.
            let missing = try await Self.launch(setup, server(setup) + ["-HADashboard", "wall-nowhere"])
            #expect(missing.log.contains("ERROR [conn] Lovelace config fetch failed: {\n"), "\(missing.log)")
            #expect(missing.log.contains("message = \"Unknown config specified: wall-nowhere\";"))
            #expect(
                missing.log.contains(" INFO [conn] No Lovelace config — using original-states strategy\n"))
            #expect(missing.screen.lines.first == "Home (generated)", "\(missing.screen)")

            // Settings from the preferences plist alone (rosettasim-ctl, the jailbreak's `open`);
            // a launch argument wins over the plist.
            let container = try await setup.emulator.daemon.appDataContainer(
                udid: setup.udid, bundleIdentifier: Self.bundleID)
            let prefs = container.appendingPathComponent("Library/Preferences/\(Self.bundleID).plist")
            var values =
                (try? PropertyListSerialization.propertyList(from: Data(contentsOf: prefs), format: nil))
                as? [String: Any] ?? [:]
            values["HADashboard"] = "wall-nowhere"
            values["HAClearCredentials"] = true
            values["HAServerURL"] = setup.ha.url
            values["HAAccessToken"] = setup.ha.token
            try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0).write(
                to: prefs)
            let fromPlist = try await Self.launch(setup, ["-HADashboard", "wall-lobby"])
            #expect(fromPlist.log.contains("HAClearCredentials=YES — wiping keychain"))
            #expect(fromPlist.log.contains("Lovelace config received: 2 views, 1 cards"), "\(fromPlist.log)")
            #expect(fromPlist.screen.lines.first == "Lobby wall")

            // HAAutoRegister: a mobile_app device named like the device, reporting active_dashboard.
            let registered = try await Self.launch(
                setup, ["-HAAutoRegister", "YES", "-HAClearCredentials", "NO", "-HADashboard", "wall-lobby"],
                settle: .seconds(1))
            #expect(registered.log.contains("HAAutoRegister: registration succeeded"), "\(registered.log)")
            let name = await setup.emulator.daemon.devices().first { $0.udid == setup.udid }?.deviceName ?? ""
            var sensor: MobileAppSensor?
            var value: String?
            let deadline = ContinuousClock.now + .seconds(15)
            while value != "wall-lobby" && ContinuousClock.now < deadline {
                sensor = try await setup.connection.mobileAppSensor(deviceName: name, key: "active_dashboard")
                if let sensor {
                    value = try await setup.connection.states().first { $0.entityID == sensor.entityID }?
                        .state
                }
                try await Task.sleep(for: .milliseconds(300))
            }
            #expect(sensor != nil, "no mobile_app device named \(name)")
            #expect(value == "wall-lobby")
            try await Task.sleep(for: .seconds(1))
            #expect(received.withLockedValue { $0 } == 0, "the released app fires no event")
        }
    }
}
