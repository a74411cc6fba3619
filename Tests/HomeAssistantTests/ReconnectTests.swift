import Foundation
import HomeAssistant
import TestSupport
import Testing

@Suite("Reconnect against a Home Assistant that restarts")
struct ReconnectTests {
    @Test("a subscription survives a restart; a request made while HA is down is sent when it is back")
    func survivesRestart() async throws {
        // Its own peer: stopping the shared one would break the tests running beside this one.
        let peer = try await HomeAssistantServer.start()
        let connection = try await peer.connect()
        let observer = try await peer.connect()
        do {
            let type = "hadeploy_restart_test"
            let subscription = try await connection.subscribe(to: type)
            let waiter = try await DashboardLoadWaiter.subscribe(on: observer, deployID: "during-downtime")

            try await peer.stop()
            #expect(await eventually(within: .seconds(10)) { await connection.state != .connected })
            #expect(await connection.disconnectedSince != nil)

            // HA is down: the waiter reports it unreachable rather than a plain timeout.
            let outcome = await waiter.wait(timeout: .milliseconds(500))
            guard case .notLoaded(let reason) = outcome else {
                Issue.record("expected notLoaded, got \(outcome)")
                throw CancellationError()
            }
            #expect(reason.code == "home_assistant_unreachable")
            #expect(
                reason.message.hasPrefix(
                    "Home Assistant at \(peer.baseURL) stopped answering while waiting for the ha_dashboard_loaded event"
                ),
                "\(reason.message)")
            // A new connection while it is down says what happened in words, not NIO's error dump.
            let fresh = HomeAssistantConnection(options: try peer.options())
            do {
                try await fresh.connect()
                Issue.record("connected to a stopped Home Assistant")
            } catch {
                #expect("\(error)".contains("the connection was refused"), "\(error)")
                #expect(!"\(error)".contains("SingleConnectionFailure"), "\(error)")
            }
            await fresh.close()

            // Asked while down; answered after the restart.
            let pendingPing = Task { try await connection.ping() }
            try await peer.restart()
            #expect(await eventually(within: .seconds(30)) { await connection.state == .connected })
            #expect(await connection.reconnectCount == 1)
            _ = try await pendingPing.value

            // The subscription was made again on the new socket.
            let firer = try await peer.connect()
            try await firer.fireEvent(type, data: ["after": "restart"])
            await firer.close()
            let event = try #require(try await firstEvent(of: subscription, within: .seconds(10)))
            #expect(event.data["after"] == "restart")
        } catch {
            await connection.close()
            await observer.close()
            try await peer.discard()
            throw error
        }
        await connection.close()
        await observer.close()
        try await peer.discard()
    }
}
