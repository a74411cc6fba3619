import Foundation
import HomeAssistant
import TestSupport
import Testing

@Suite("Post-launch loaded event")
struct LoadedEventTests {
    static func fire(_ connection: HomeAssistantConnection, deployID: String, device: String) async throws {
        try await connection.fireEvent(
            DashboardLoadedEvent.eventType,
            data: [
                "deploy_id": .string(deployID), "device": .string(device), "dashboard": "wall-kitchen",
                "version": "1.2.3", "build": 42, "kiosk": true,
            ])
    }

    @Test("the event with the waited-for deploy id and device counts; others are ignored")
    func loaded() async throws {
        let peer = try await HomeAssistantServer.shared()
        let deployID = UUID().uuidString
        let app = try await peer.connect()
        try await withConnection(peer) { connection in
            let waiter = try await DashboardLoadWaiter.subscribe(
                on: connection, deployID: deployID, device: "ipad2")
            let launched = Task {
                try await Task.sleep(for: .milliseconds(200))
                try await Self.fire(app, deployID: "another-deploy", device: "ipad2")
                try await Self.fire(app, deployID: deployID, device: "iphone-se")
                try await Self.fire(app, deployID: deployID, device: "ipad2")
            }
            let outcome = await waiter.wait(timeout: .seconds(20))
            try await launched.value
            guard case .loaded(let after, let event) = outcome else {
                Issue.record("expected loaded, got \(outcome)")
                return
            }
            #expect(event.deployID == deployID && event.device == "ipad2")
            #expect(event.dashboard == "wall-kitchen" && event.version == "1.2.3" && event.build == "42")
            #expect(event.kiosk == true)
            #expect(after > .zero && after < .seconds(20))
            await waiter.cancel()
        }
        await app.close()
    }

    @Test("only other deploy ids or devices: timed out")
    func timedOut() async throws {
        let peer = try await HomeAssistantServer.shared()
        let deployID = UUID().uuidString
        let app = try await peer.connect()
        try await withConnection(peer) { connection in
            let waiter = try await DashboardLoadWaiter.subscribe(
                on: connection, deployID: deployID, device: "ipad2")
            try await Self.fire(app, deployID: "another-deploy", device: "ipad2")
            try await Self.fire(app, deployID: deployID, device: "ipad-mini")
            let outcome = await waiter.wait(timeout: .milliseconds(1500))
            guard case .notLoaded(let reason) = outcome else {
                Issue.record("expected notLoaded, got \(outcome)")
                return
            }
            #expect(reason.code == "timed_out")
            #expect(reason.message.contains("ipad2"))
            await waiter.cancel()
        }
        await app.close()
    }

    @Test("a transport can end the wait with its own reason")
    func aborted() async throws {
        let peer = try await HomeAssistantServer.shared()
        try await withConnection(peer) { connection in
            let waiter = try await DashboardLoadWaiter.subscribe(on: connection, deployID: "x")
            Task {
                try await Task.sleep(for: .milliseconds(100))
                await waiter.abort(.appCrashed("SIGSEGV in WebKit"))
            }
            let outcome = await waiter.wait(timeout: .seconds(20))
            #expect(outcome == .notLoaded(.appCrashed("SIGSEGV in WebKit")))
            await waiter.cancel()
        }
    }
}
