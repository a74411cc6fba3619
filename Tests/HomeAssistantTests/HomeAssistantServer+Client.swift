import Foundation
import HomeAssistant
import Logging
import TestSupport

/// The shared test server (TestSupport) seen through this library's client types.
extension HomeAssistantServer {
    var accessToken: AccessToken { AccessToken(token) }

    /// The base URL as the tests give it to `ServerAddress` (and as errors name it).
    var baseURL: String { url + "/" }

    func options(
        token override: AccessToken? = nil, requestTimeout: Duration = .seconds(30),
        reconnect: ReconnectPolicy = ReconnectPolicy()
    ) throws -> ClientOptions {
        var logger = Logger(label: "homeassistant.tests")
        if ProcessInfo.processInfo.environment["HA_TEST_TRACE"] != nil { logger.logLevel = .trace }
        return ClientOptions(
            server: try ServerAddress(baseURL), token: override ?? accessToken, clock: TestHost.clock,
            requestTimeout: requestTimeout,
            reconnect: reconnect, logger: logger)
    }

    /// A connected client; close it at the end of the test.
    func connect() async throws -> HomeAssistantConnection {
        let connection = HomeAssistantConnection(options: try options())
        try await connection.connect()
        return connection
    }
}
