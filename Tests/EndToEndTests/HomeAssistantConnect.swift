import HomeAssistant
import TestSupport

extension HomeAssistantServer {
    /// A connected WebSocket client with the server's token, for seeding dashboards; the caller closes it.
    func connected() async throws -> HomeAssistantConnection {
        let connection = HomeAssistantConnection(
            options: ClientOptions(
                server: try ServerAddress(url), token: AccessToken(token), clock: TestHost.clock))
        try await connection.connect()
        return connection
    }
}
