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
                options: ClientOptions(server: try ServerAddress(ha.url + "/"), token: AccessToken(ha.token)))
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

        /// Runs `idevicedebug run` with the launch contract until the screen leaves "Connecting" (or 40 s),
        /// then interrupts it; returns the screen the app showed.
        static func launch(_ setup: Setup, token: String, dashboard: String, kiosk: Bool, deployID: String)
            async throws
            -> (VirtualScreen, Data)
        {
            let seen = NIOLockedValueBox<(VirtualScreen, Data)?>(nil)
            let daemon = setup.emulator.daemon
            let udid = setup.udid
            let run = try await ToolRunner.run(
                "idevicedebug",
                [
                    "-u", udid, "run", "io.hadeploy.dashboard", "-HAServerURL", setup.ha.url + "/",
                    "-HAAccessToken",
                    token,
                    "-HADashboard", dashboard, "-HAKioskMode", kiosk ? "YES" : "NO", "-HADeployID", deployID,
                    "-HADeviceID", "mini4",
                ],
                socket: setup.emulator.socket, timeout: 60,
                interruptWhen: {
                    guard let app = try? await daemon.runningApp(udid: udid),
                        app.screen.lines.first != "Connecting to" && app.screen.lines.first != "Starting..."
                    else { return false }
                    // Give the app a moment to fire its event after drawing.
                    try? await Task.sleep(for: .milliseconds(500))
                    let shot = (try? await daemon.screenshot(udid: udid)) ?? Data()
                    seen.withLockedValue { $0 = (app.screen, shot) }
                    return true
                })
            #expect(!run.timedOut, "\(run)")
            #expect(!run.output.contains(token), "the token never reaches the tool output")
            return try #require(seen.withLockedValue { $0 }, "the app never showed a result: \(run)")
        }

        @Test("loads the dashboard, fires ha_dashboard_loaded, shows it; errors are shown and fire nothing")
        func dashboardContract() async throws {
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
            let received = NIOLockedValueBox<[DashboardLoadedEvent]>([])
            let listener = Task {
                for try await event in events {
                    if let loaded = DashboardLoadedEvent(event) {
                        received.withLockedValue { $0.append(loaded) }
                    }
                }
            }
            defer { listener.cancel() }

            let deployID = UUID().uuidString
            let (screen, shot) = try await Self.launch(
                setup, token: setup.ha.token, dashboard: "wall-lobby", kiosk: false,
                deployID: deployID)
            #expect(!screen.isError, "\(screen)")
            #expect(
                screen.lines.contains("Lobby wall") && screen.lines.contains("Main: 1 card"),
                "\(screen.lines)")
            let deadline = ContinuousClock.now + .seconds(10)
            while received.withLockedValue({ $0.isEmpty }) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            let event = try #require(received.withLockedValue { $0.first })
            #expect(event.deployID == deployID && event.device == "mini4" && event.dashboard == "wall-lobby")
            #expect(event.version == "1.2.3" && event.build == "42" && event.kiosk == false)
            // The screenshot shows the app: HA-blue header below the status bar.
            let image = try ImageCodec.decode(shot)
            #expect(image.color(x: 5, y: 200) == RGBImage.Color(red: 0x03, green: 0xA9, blue: 0xF4))

            // Kiosk mode: no status bar or header.
            let (kioskScreen, kioskShot) = try await Self.launch(
                setup, token: setup.ha.token, dashboard: "wall-lobby", kiosk: true,
                deployID: UUID().uuidString)
            #expect(kioskScreen.kiosk && !kioskScreen.isError)
            #expect(
                try ImageCodec.decode(kioskShot).color(x: 5, y: 5)
                    == RGBImage.Color(red: 0xFA, green: 0xFA, blue: 0xFA))

            let before = received.withLockedValue { $0.count }
            let (badToken, badShot) = try await Self.launch(
                setup, token: "not-a-token", dashboard: "wall-lobby", kiosk: false,
                deployID: UUID().uuidString)
            #expect(badToken.isError && badToken.lines.first == "Authentication failed", "\(badToken)")
            // Red error banner under the header.
            let bad = try ImageCodec.decode(badShot)
            let banner = (0..<bad.height).map { bad.color(x: 5, y: $0) }
            #expect(banner.contains(RGBImage.Color(red: 0xDB, green: 0x44, blue: 0x37)))

            let (missing, _) = try await Self.launch(
                setup, token: setup.ha.token, dashboard: "wall-nowhere", kiosk: false,
                deployID: UUID().uuidString)
            #expect(
                missing.isError && missing.lines == ["Dashboard not found", "wall-nowhere"], "\(missing)")
            try await Task.sleep(for: .seconds(1))
            #expect(received.withLockedValue { $0.count } == before, "errors fire no event")
        }
    }
}
