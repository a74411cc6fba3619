import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix

/// Home Assistant's REST API (`/api/…`) with bearer auth. Every call has
/// `options.requestTimeout` as its deadline. Call ``shutdown()`` when done.
public final class HomeAssistantREST: Sendable {
    public let options: ClientOptions
    private let http: HTTPClient

    public init(options: ClientOptions) throws {
        self.options = options
        var configuration = HTTPClient.Configuration()
        if options.server.isSecure {
            configuration.tlsConfiguration = try TLSSetup.configuration(
                caFile: options.caFile, server: options.server.baseURL)
        }
        configuration.timeout = .init(connect: options.connectTimeout.timeAmount)
        configuration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    /// Releases the HTTP client's connections.
    public func shutdown() async throws {
        try await http.shutdown()
    }

    /// `GET /api/`: `"API running."` when the server is up and the token accepted.
    public func apiStatus() async throws -> String {
        struct Message: Decodable { let message: String }
        return try await get("api/", as: Message.self).message
    }

    /// `GET /api/config`.
    public func config() async throws -> HomeAssistantConfig {
        try await get("api/config", as: HomeAssistantConfig.self)
    }

    /// `GET /api/states`.
    public func states() async throws -> [EntityState] {
        try await get("api/states", as: [EntityState].self)
    }

    /// `GET /api/states/<entity_id>`; `nil` when HA does not know the entity (404).
    public func state(of entityID: String) async throws -> EntityState? {
        let path = "api/states/" + (try Self.checkedEntityID(entityID, server: options.server.baseURL))
        let (status, body) = try await call(.GET, path, body: nil)
        if status == 404 { return nil }
        try check(status, path)
        return try decode(EntityState.self, body, path)
    }

    /// `POST /api/states/<entity_id>`: creates or replaces a state (the attributes are replaced
    /// whole). States made this way are not persisted across a restart.
    @discardableResult
    public func setState(_ entityID: String, state: String, attributes: [String: JSONValue] = [:])
        async throws
        -> EntityState
    {
        let path = "api/states/" + (try Self.checkedEntityID(entityID, server: options.server.baseURL))
        let body: JSONValue = ["state": .string(state), "attributes": .object(attributes)]
        let (status, response) = try await call(.POST, path, body: try JSONEncoder().encode(body))
        try check(status, path)
        return try decode(EntityState.self, response, path)
    }

    /// `POST /api/events/<event_type>` (admin only).
    public func fireEvent(_ eventType: String, data: [String: JSONValue] = [:]) async throws {
        let path = "api/events/" + eventType
        let (status, _) = try await call(.POST, path, body: try JSONEncoder().encode(JSONValue.object(data)))
        try check(status, path)
    }

    // MARK: - plumbing

    private func get<T: Decodable>(_ path: String, as type: T.Type) async throws -> T {
        let (status, body) = try await call(.GET, path, body: nil)
        try check(status, path)
        return try decode(type, body, path)
    }

    /// `authorized: false` for webhooks, whose id is the credential.
    func call(_ method: HTTPMethod, _ path: String, body: Data?, authorized: Bool = true) async throws
        -> (UInt, ByteBuffer)
    {
        let url = options.server.restURL(path)
        var request = HTTPClientRequest(url: url)
        request.method = method
        if authorized {
            request.headers.add(name: "Authorization", value: "Bearer \(options.token.reveal())")
        }
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: body))
        }
        let timeout = options.requestTimeout
        do {
            let response = try await http.execute(request, timeout: timeout.timeAmount)
            let bytes = try await response.body.collect(upTo: 256 << 20)
            return (response.status.code, bytes)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw HomeAssistantError.timedOut(options.server.baseURL, "\(method) /\(path)", after: timeout)
        } catch {
            throw HomeAssistantError.unreachable(
                options.server.baseURL, tried: url, SocketOpener.describe(error))
        }
    }

    func check(_ status: UInt, _ path: String) throws {
        switch status {
        case 200..<300: return
        case 401: throw HomeAssistantError.tokenRefused(options.server.baseURL)
        default:
            throw HomeAssistantError(
                .commandFailed(code: "http_\(status)"), server: options.server.baseURL,
                message: "Home Assistant at \(options.server.baseURL) answered HTTP \(status) to /\(path)")
        }
    }

    func decode<T: Decodable>(_ type: T.Type, _ body: ByteBuffer, _ path: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw HomeAssistantError(
                .invalidResponse, server: options.server.baseURL,
                message: "Home Assistant at \(options.server.baseURL) answered /\(path) with something this "
                    + "client cannot read (\(error))")
        }
    }

    /// Entity ids are `domain.object_id` in lowercase letters, digits and `_`; anything else would
    /// change the URL's meaning.
    static func checkedEntityID(_ entityID: String, server: String) throws -> String {
        guard EntityID.isValid(entityID) else {
            throw HomeAssistantError(
                .commandFailed(code: "invalid_entity_id"), server: server,
                message: "'\(entityID)' is not an entity id (expected domain.object_id, e.g. light.kitchen)")
        }
        return entityID
    }
}
