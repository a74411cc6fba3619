import Foundation
import HADeployCore
import Logging
import NIOWebSocket

/// One authenticated connection to Home Assistant's WebSocket API (`/api/websocket`).
///
/// ```swift
/// let connection = HomeAssistantConnection(options: ClientOptions(server: try ServerAddress(url), token: token))
/// try await connection.connect()
/// let states = try await connection.send(GetStatesRequest())
/// for try await event in try await connection.subscribe(to: "state_changed") { … }
/// await connection.close()
/// ```
///
/// Replies are matched to requests by id; every request has a deadline. When the server goes away
/// the connection reconnects with backoff, subscribes again and re-sends the requests that had no
/// reply yet (so a non-idempotent command such as `fire_event` may run twice if HA executed it just
/// before the connection dropped). Call ``close()`` when done.
public actor HomeAssistantConnection {
    public let options: ClientOptions
    /// `ha_version` from `auth_ok`.
    public private(set) var haVersion: String?

    /// What a server says its version is, as it is shown: a real one is short (`2024.3.3`), so at most
    /// 32 characters of it, control characters dropped (a hostile server's 100,000 digits are not printed).
    static func shownVersion(_ version: String) -> String {
        let clean = String(
            String.UnicodeScalarView(version.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        return clean.count > 32 ? String(clean.prefix(32)) + "…" : clean
    }
    public private(set) var state: ConnectionState = .idle
    /// How many times the connection came back after losing the server.
    public private(set) var reconnectCount = 0
    /// When the server was lost (a reading of `options.clock`), while it is; `nil` when connected.
    public private(set) var disconnectedSince: ContinuousClock.Instant?

    private var logger: Logger
    private var socket: WebSocketChannel?
    private var generation = 0
    private var nextID = 1
    private var nextKey = 1
    private var pending: [Int: PendingRequest] = [:]
    private var pendingByServerID: [Int: Int] = [:]
    private var subscriptions: [Int: SubscriptionRecord] = [:]
    private var subscriptionByServerID: [Int: Int] = [:]
    private var handshakeOutcome: Result<String, HomeAssistantError>?
    private var handshakeWaiter: CheckedContinuation<String, any Error>?
    private var reconnectTask: Task<Void, Never>?
    /// Why the socket is being closed when the server broke a limit or the protocol.
    private var brokenBy: String?

    private static let encoder = JSONEncoder()

    public init(options: ClientOptions) {
        self.options = options
        var logger = options.logger
        logger[metadataKey: "ha.server"] = "\(options.server.baseURL)"
        self.logger = logger
    }

    deinit {
        socket?.close()
        reconnectTask?.cancel()
    }

    private var serverName: String { options.server.baseURL }

    // MARK: - Lifecycle

    /// Opens the socket and authenticates, within `options.connectTimeout`.
    /// Throws ``HomeAssistantError`` (`.unreachable`, `.tokenRefused`, `.timedOut`).
    public func connect() async throws {
        switch state {
        case .connected, .connecting, .reconnecting: return
        case .idle, .closed: break
        }
        state = .connecting
        do {
            try await establish()
            state = .connected
            resendAfterConnect()
        } catch {
            state = .closed
            throw error
        }
    }

    /// Closes the socket, fails pending requests and ends every subscription.
    public func close() async {
        guard state != .closed || socket != nil else { return }
        state = .closed
        reconnectTask?.cancel()
        reconnectTask = nil
        generation += 1
        let closing = socket
        socket = nil
        failEverything(
            HomeAssistantError(
                .notConnected, server: serverName, message: "the connection to \(serverName) was closed"))
        // Not awaited: the close frame is written on the event loop, and a server that stopped
        // reading must not hold up the caller.
        closing?.close(code: .normalClosure)
    }

    private func establish() async throws {
        generation += 1
        let current = generation
        handshakeOutcome = nil
        handshakeWaiter = nil
        let (socket, frames) = try await SocketOpener.open(options)
        guard current == generation, state != .closed else {
            socket.close(code: .goingAway)
            throw HomeAssistantError.notConnected(serverName)
        }
        self.socket = socket
        Task { [weak self] in
            for await frame in frames {
                guard let self else { return }
                await self.receive(frame, generation: current)
            }
        }
        let (timeout, clock) = (options.connectTimeout, options.clock)
        let timer = Task { [weak self] in
            try? await clock.sleep(for: timeout)
            await self?.handshakeTimedOut(generation: current)
        }
        defer { timer.cancel() }
        let version = try await withCheckedThrowingContinuation {
            (waiter: CheckedContinuation<String, any Error>) in
            if let outcome = handshakeOutcome {
                waiter.resume(with: outcome)
            } else {
                handshakeWaiter = waiter
            }
        }
        haVersion = Self.shownVersion(version)
        disconnectedSince = nil
        logger.debug("authenticated", metadata: ["ha.version": "\(version)"])
    }

    private func finishHandshake(_ outcome: Result<String, HomeAssistantError>) {
        guard handshakeOutcome == nil else { return }
        handshakeOutcome = outcome
        if let waiter = handshakeWaiter {
            handshakeWaiter = nil
            waiter.resume(with: outcome)
        }
    }

    private func handshakeTimedOut(generation timedOut: Int) {
        guard timedOut == generation, handshakeOutcome == nil else { return }
        finishHandshake(
            .failure(
                HomeAssistantError(
                    .timedOut, server: serverName,
                    message: "Home Assistant at \(serverName) opened the WebSocket but did not finish the "
                        + "authentication within \(options.connectTimeout.secondsText): it is stalled (still "
                        + "starting, overloaded, or stuck). Check its log or restart it, then try again")))
        socket?.close()
    }

    // MARK: - Requests

    /// Sends a typed command and decodes its reply; `timeout` overrides `options.requestTimeout`.
    /// Throws ``HomeAssistantError``: `.commandFailed(code:)` when HA answers `success: false`.
    public nonisolated func send<Request: HomeAssistantRequest>(
        _ request: Request, timeout: Duration? = nil
    ) async throws -> Request.Response {
        let reply = try await perform(
            type: request.type, parameters: request.parameters, timeout: timeout ?? options.requestTimeout)
        do {
            return try Request.decodeResponse(from: reply)
        } catch {
            throw HomeAssistantError(
                .invalidResponse, server: options.server.baseURL,
                message: "Home Assistant at \(options.server.baseURL) answered \(request.type) with "
                    + "something this client cannot read (\(error)); is the server version supported?")
        }
    }

    /// `get_config`.
    public nonisolated func config() async throws -> HomeAssistantConfig {
        try await send(GetConfigRequest())
    }
    /// `get_states`.
    public nonisolated func states() async throws -> [EntityState] { try await send(GetStatesRequest()) }
    /// `get_services`.
    public nonisolated func services() async throws -> [String: [String: JSONValue]] {
        try await send(GetServicesRequest())
    }
    /// `lovelace/config` for a dashboard (`nil`: the default one).
    public nonisolated func lovelaceConfig(urlPath: String? = nil) async throws -> LovelaceConfig {
        try await send(LovelaceConfigRequest(urlPath: urlPath))
    }
    /// `lovelace/dashboards/list`.
    public nonisolated func dashboards() async throws -> [LovelaceDashboard] {
        try await send(ListDashboardsRequest())
    }
    /// `fire_event`; returns the result (`{"context": …}`).
    @discardableResult
    public nonisolated func fireEvent(_ eventType: String, data: [String: JSONValue]? = nil) async throws
        -> JSONValue
    {
        try await send(FireEventRequest(eventType: eventType, data: data))
    }
    /// `ping`; returns the round-trip time.
    @discardableResult
    public nonisolated func ping() async throws -> Duration {
        let start = options.clock.instant()
        _ = try await send(PingRequest())
        return options.clock.elapsed(since: start)
    }

    private func perform(type: String, parameters: [String: JSONValue], timeout: Duration) async throws
        -> CommandReply
    {
        switch state {
        case .idle, .closed: throw HomeAssistantError.notConnected(serverName)
        case .connecting, .connected, .reconnecting: break
        }
        let key = allocateKey()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (waiter: CheckedContinuation<CommandReply, any Error>) in
                enqueue(key: key, type: type, parameters: parameters, subscriptionKey: nil, timeout: timeout)
                {
                    waiter.resume(with: $0.mapError { $0 as any Error })
                }
            }
        } onCancel: {
            Task { await self.cancelPending(key: key) }
        }
    }

    private func allocateKey() -> Int {
        defer { nextKey += 1 }
        return nextKey
    }

    private func enqueue(
        key: Int, type: String, parameters: [String: JSONValue], subscriptionKey: Int?, timeout: Duration,
        complete: @escaping @Sendable (Result<CommandReply, HomeAssistantError>) -> Void
    ) {
        let clock = options.clock
        let timer = Task { [weak self] in
            try? await clock.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            await self?.expire(key: key, type: type, timeout: timeout)
        }
        pending[key] = PendingRequest(
            type: type, parameters: parameters, serverID: nil, subscriptionKey: subscriptionKey,
            complete: complete, timeout: timer)
        if state == .connected, socket != nil {
            transmit(key: key)
        }
    }

    private func transmit(key: Int) {
        guard var request = pending[key], let socket else { return }
        let id = nextID
        nextID += 1
        request.serverID = id
        pending[key] = request
        pendingByServerID[id] = key
        if let subscriptionKey = request.subscriptionKey, subscriptions[subscriptionKey] != nil {
            // Map the id before sending: HA may send the first event before the result.
            subscriptions[subscriptionKey]?.serverID = id
            subscriptionByServerID[id] = subscriptionKey
        }
        var message = request.parameters
        message["id"] = .number(Double(id))
        message["type"] = .string(request.type)
        write(message, on: socket)
        logger.trace("sent", metadata: ["ha.id": "\(id)", "ha.type": "\(request.type)"])
    }

    private func write(_ message: [String: JSONValue], on socket: WebSocketChannel) {
        guard let data = try? Self.encoder.encode(message) else { return }
        socket.send(String(decoding: data, as: UTF8.self))
    }

    private func resolve(key: Int, with result: Result<CommandReply, HomeAssistantError>) {
        guard let request = pending.removeValue(forKey: key) else { return }
        if let id = request.serverID { pendingByServerID[id] = nil }
        request.timeout?.cancel()
        request.complete(result)
    }

    private func expire(key: Int, type: String, timeout: Duration) {
        resolve(key: key, with: .failure(.timedOut(serverName, type, after: timeout)))
    }

    private func cancelPending(key: Int) {
        resolve(
            key: key,
            with: .failure(
                HomeAssistantError(.cancelled, server: serverName, message: "the request was cancelled")))
    }

    // MARK: - Subscriptions

    /// Subscribes to one event type (`nil`: all events; both need an admin token for types outside
    /// HA's allowlist). Returns once HA confirmed the subscription; events that arrive before the
    /// confirmation are kept.
    public func subscribe(to eventType: String?) async throws -> Subscription<HomeAssistantEvent> {
        try await subscribe(SubscribeEventsRequest(eventType: eventType), element: HomeAssistantEvent.self)
    }

    /// Any subscribing command (`subscribe_trigger`, `subscribe_entities`, …): each element is the
    /// `event` member of the messages it produces.
    public func subscribe(raw command: RawRequest) async throws -> Subscription<JSONValue> {
        try await subscribe(command, element: JSONValue.self)
    }

    private func subscribe<Request: HomeAssistantRequest, Element: Decodable & Sendable>(
        _ command: Request, element: Element.Type
    ) async throws -> Subscription<Element> {
        switch state {
        case .idle, .closed: throw HomeAssistantError.notConnected(serverName)
        case .connecting, .connected, .reconnecting: break
        }
        let key = allocateKey()
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: Element.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(100_000))
        let logger = self.logger
        subscriptions[key] = SubscriptionRecord(
            type: command.type, parameters: command.parameters, serverID: nil,
            deliver: { message in
                do {
                    continuation.yield(
                        try JSONDecoder().decode(EventEnvelope<Element>.self, from: message).event)
                } catch {
                    logger.warning("dropped an event that could not be decoded: \(error)")
                }
            },
            finish: { error in continuation.finish(throwing: error) })
        continuation.onTermination = { [weak self] _ in
            Task { await self?.endSubscription(key: key) }
        }
        do {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                enqueue(
                    key: allocateKey(), type: command.type, parameters: command.parameters,
                    subscriptionKey: key,
                    timeout: options.requestTimeout
                ) { result in
                    waiter.resume(with: result.map { _ in () }.mapError { $0 as any Error })
                }
            }
        } catch {
            dropSubscription(key: key)
            continuation.finish(throwing: error)
            throw error
        }
        subscriptions[key]?.confirmed = true
        return Subscription(stream: stream, key: key, connection: self)
    }

    /// Ends a subscription: `unsubscribe_events` when connected, then the sequence finishes.
    func endSubscription(key: Int) {
        guard let record = subscriptions[key] else { return }
        dropSubscription(key: key)
        record.finish(nil)
        if let id = record.serverID, state == .connected, socket != nil {
            let unsubscribe = UnsubscribeEventsRequest(subscription: id)
            enqueue(
                key: allocateKey(), type: unsubscribe.type, parameters: unsubscribe.parameters,
                subscriptionKey: nil,
                timeout: options.requestTimeout, complete: { _ in })
        }
    }

    private func dropSubscription(key: Int) {
        guard let record = subscriptions.removeValue(forKey: key) else { return }
        if let id = record.serverID { subscriptionByServerID[id] = nil }
    }

    // MARK: - Incoming

    private func receive(_ frame: SocketFrame, generation received: Int) {
        guard received == generation else { return }
        switch frame {
        case .failed(let reason):
            brokenBy = reason
        case .closed(let code):
            socketEnded(code: code)
        case .text(let data):
            // HA batches messages in a JSON array only after `supported_features` asked for it;
            // handle it anyway so a proxy or a future default cannot break routing.
            if data.first == UInt8(ascii: "[") {
                guard let batch = try? JSONDecoder().decode([JSONValue].self, from: data) else { return }
                for message in batch {
                    if let single = try? Self.encoder.encode(message) { handle(single) }
                }
            } else {
                handle(data)
            }
        }
    }

    private func handle(_ data: Data) {
        guard let header = try? JSONDecoder().decode(IncomingHeader.self, from: data) else {
            logger.warning("ignored a message that is not a Home Assistant message")
            return
        }
        switch header.type {
        case "auth_required":
            guard let socket else { return }
            write(["type": "auth", "access_token": .string(options.token.reveal())], on: socket)
        case "auth_ok":
            finishHandshake(.success(header.haVersion ?? "unknown"))
        case "auth_invalid":
            finishHandshake(.failure(.tokenRefused(serverName)))
        case "result", "pong":
            guard let id = header.id, let key = pendingByServerID[id] else {
                // HA 2024.3 sends a second result for some failed deletes; a late reply after a
                // timeout lands here too.
                logger.debug(
                    "ignored a reply for an id that is not pending", metadata: ["ha.id": "\(header.id ?? -1)"]
                )
                return
            }
            if header.type == "pong" || header.success == true {
                resolve(key: key, with: .success(CommandReply(message: data)))
            } else {
                let type = pending[key]?.type ?? "the command"
                let code = header.error?.code ?? "unknown_error"
                let message = header.error?.message ?? "no message"
                resolve(
                    key: key,
                    with: .failure(
                        HomeAssistantError(
                            .commandFailed(code: code), server: serverName,
                            message: "Home Assistant at \(serverName) refused \(type): \(code): \(message)")))
            }
        case "event":
            guard let id = header.id, let key = subscriptionByServerID[id], let record = subscriptions[key]
            else {
                return
            }
            record.deliver(data)
        default:
            logger.debug("ignored a message of type \(header.type)")
        }
    }

    private func socketEnded(code: String) {
        socket = nil
        generation += 1
        if let reason = brokenBy {
            // Not a network fault that reconnecting mends: the same server would do it again.
            brokenBy = nil
            let error = HomeAssistantError(
                .invalidResponse, server: serverName,
                message: "stopped reading from Home Assistant at \(serverName): \(reason). Is this Home "
                    + "Assistant, and is nothing in front of it (a proxy) altering its answers?")
            finishHandshake(.failure(error))
            guard state == .connected || state == .connecting else { return }
            state = .closed
            reconnectTask?.cancel()
            reconnectTask = nil
            failEverything(error)
            return
        }
        if handshakeOutcome == nil {
            finishHandshake(
                .failure(
                    .unreachable(
                        serverName, tried: options.server.webSocketURL,
                        "the server closed the connection during authentication (close code \(code))")))
        }
        guard state == .connected else { return }
        logger.info("lost the connection to Home Assistant", metadata: ["ha.close": "\(code)"])
        disconnectedSince = options.clock.instant()
        for key in pending.keys { pending[key]?.serverID = nil }
        pendingByServerID.removeAll()
        for key in subscriptions.keys { subscriptions[key]?.serverID = nil }
        subscriptionByServerID.removeAll()
        guard options.reconnect.isEnabled else {
            state = .closed
            failEverything(
                .unreachable(
                    serverName, tried: options.server.webSocketURL, "the server closed the connection"))
            return
        }
        state = .reconnecting(attempt: 1)
        reconnectTask = Task { [weak self] in await self?.reconnectLoop() }
    }

    // MARK: - Reconnect

    private func reconnectLoop() async {
        var attempt = 0
        while !Task.isCancelled {
            try? await options.clock.sleep(for: options.reconnect.delay(forAttempt: attempt))
            guard !Task.isCancelled, case .reconnecting = state else { return }
            state = .reconnecting(attempt: attempt + 1)
            do {
                try await establish()
                guard case .reconnecting = state else { return }
                state = .connected
                reconnectCount += 1
                logger.info("reconnected to Home Assistant", metadata: ["ha.attempts": "\(attempt + 1)"])
                resendAfterConnect()
                return
            } catch let error as HomeAssistantError
                where error.kind == .tokenRefused || error.kind == .invalidResponse
            {
                state = .closed
                socket?.close()
                socket = nil
                failEverything(error)
                return
            } catch {
                logger.debug("reconnect attempt \(attempt + 1) failed: \(error)")
                attempt += 1
            }
        }
    }

    /// After (re)authentication: subscriptions first (so no event of a re-sent command is lost),
    /// then every request still waiting, in the order they were made.
    private func resendAfterConnect() {
        guard state == .connected, socket != nil else { return }
        for key in subscriptions.keys.sorted() {
            guard let record = subscriptions[key], record.confirmed, record.serverID == nil else { continue }
            enqueue(
                key: allocateKey(), type: record.type, parameters: record.parameters, subscriptionKey: key,
                timeout: options.requestTimeout
            ) { [weak self] result in
                if case .failure(let error) = result {
                    Task { await self?.subscriptionFailed(key: key, error) }
                }
            }
        }
        for key in pending.keys.sorted() where pending[key]?.serverID == nil {
            transmit(key: key)
        }
    }

    private func subscriptionFailed(key: Int, _ error: HomeAssistantError) {
        guard let record = subscriptions[key] else { return }
        dropSubscription(key: key)
        record.finish(error)
    }

    private func failEverything(_ error: HomeAssistantError) {
        for key in pending.keys.sorted() { resolve(key: key, with: .failure(error)) }
        for key in subscriptions.keys.sorted() {
            let record = subscriptions[key]
            dropSubscription(key: key)
            record?.finish(error.kind == .notConnected ? nil : error)
        }
    }
}

private struct EventEnvelope<Event: Decodable>: Decodable {
    let event: Event
}
