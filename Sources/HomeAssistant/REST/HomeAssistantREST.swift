import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL

/// Home Assistant's REST API (`/api/…`) with bearer auth. Every call has
/// `options.requestTimeout` as its deadline, from connecting to the last byte of the answer.
public final class HomeAssistantREST: Sendable {
    public let options: ClientOptions
    private let exchange: HTTPExchange

    /// The most one answer may hold: `/api/states` of a large house is a few MB.
    static let maxResponseBytes = 256 << 20

    public convenience init(options: ClientOptions) throws {
        try self.init(options: options, maxResponseBytes: Self.maxResponseBytes)
    }

    init(options: ClientOptions, maxResponseBytes: Int) throws {
        self.options = options
        // One TLS context for every call: it holds the parsed trust roots.
        let tls =
            options.server.isSecure
            ? try NIOSSLContext(
                configuration: TLSSetup.configuration(caFile: options.caFile, server: options.server.baseURL))
            : nil
        exchange = HTTPExchange(
            server: options.server, tls: tls, connectTimeout: options.connectTimeout,
            maxBodyBytes: maxResponseBytes)
    }

    /// Nothing to release (each call closes its own connection); kept for callers written against
    /// a pooled client.
    public func shutdown() async throws {}

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
        var headers = HTTPHeaders()
        if authorized {
            headers.add(name: "Authorization", value: "Bearer \(options.token.reveal())")
        }
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "User-Agent", value: "hadeploy")
        if body != nil { headers.add(name: "Content-Type", value: "application/json") }
        let timeout = options.requestTimeout
        let server = options.server.baseURL
        do {
            return try await exchange.perform(
                method, path, headers: headers, body: body.map { ByteBuffer(data: $0) }, deadline: timeout)
        } catch HTTPExchange.Failure.deadline {
            throw HomeAssistantError.timedOut(server, "\(method) /\(path)", after: timeout)
        } catch HTTPExchange.Failure.tooLarge(let limit) {
            throw HomeAssistantError(
                .invalidResponse, server: server,
                message: "Home Assistant at \(server) answered \(method) /\(path) with more than "
                    + "\(limit.byteCountText), the most this client reads in one answer")
        } catch is CancellationError {
            throw HomeAssistantError(.cancelled, server: server, message: "the request was cancelled")
        } catch {
            throw HomeAssistantError.unreachable(
                server, tried: options.server.restURL(path), SocketOpener.describe(error))
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
