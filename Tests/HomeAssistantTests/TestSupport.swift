import Foundation
import HomeAssistant
import TestSupport
import Testing

/// Runs `body` with a connected client and closes it afterwards, whatever happens.
func withConnection<T: Sendable>(
    _ peer: HomeAssistantServer, _ body: (HomeAssistantConnection) async throws -> T
) async throws -> T {
    let connection = try await peer.connect()
    do {
        let result = try await body(connection)
        await connection.close()
        return result
    } catch {
        await connection.close()
        throw error
    }
}

/// A url_path HA accepts (it needs a hyphen) and no other test uses.
func uniqueDashboardPath(_ stem: String) -> String {
    "\(stem)-\(UUID().uuidString.prefix(6).lowercased())"
}

/// Creates a storage dashboard and saves `config` into it, through the raw request API.
func createDashboard(_ urlPath: String, config: JSONValue?, on connection: HomeAssistantConnection)
    async throws
{
    _ = try await connection.send(
        RawRequest("lovelace/dashboards/create", ["url_path": .string(urlPath), "title": .string(urlPath)]))
    if let config {
        _ = try await connection.send(
            RawRequest("lovelace/config/save", ["url_path": .string(urlPath), "config": config]))
    }
}

/// Polls `condition` until it holds or `deadline` passes.
func eventually(
    within deadline: Duration, _ condition: @Sendable () async -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + deadline
    while clock.now < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return await condition()
}

/// The first element of a subscription, or nil after `timeout`.
func firstEvent<Element: Sendable>(
    of subscription: Subscription<Element>, within timeout: Duration,
    where predicate: @escaping @Sendable (Element) -> Bool = { _ in true }
) async throws -> Element? {
    try await withThrowingTaskGroup(of: Element?.self) { group in
        group.addTask {
            for try await element in subscription where predicate(element) { return element }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
