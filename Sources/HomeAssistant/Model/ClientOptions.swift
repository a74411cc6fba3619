import HADeployCore
import Logging

/// Everything a Home Assistant client needs to reach one server.
public struct ClientOptions: Sendable {
    public var server: ServerAddress
    public var token: AccessToken
    /// Times every deadline, reconnect delay and duration (the context's clock).
    public var clock: any WallClock
    /// A PEM file of extra trusted certificates (a self-signed server or a private CA), on top of
    /// the system's roots.
    public var caFile: String?
    /// Deadline for TCP + TLS + WebSocket upgrade + authentication.
    public var connectTimeout: Duration
    /// Default deadline for each request (a request may pass its own).
    public var requestTimeout: Duration
    public var reconnect: ReconnectPolicy
    /// HA sends each message as one frame; `get_states` is 1.7 MB at 5,000 entities.
    /// NIO's default (16 KiB) would refuse such a message; 64 MiB leaves room for a big house.
    public var maxFrameSize: Int
    public var logger: Logger

    public init(
        server: ServerAddress,
        token: AccessToken,
        clock: any WallClock,
        caFile: String? = nil,
        connectTimeout: Duration = .seconds(10),
        requestTimeout: Duration = .seconds(30),
        reconnect: ReconnectPolicy = ReconnectPolicy(),
        maxFrameSize: Int = 64 << 20,
        logger: Logger = Logger(label: "homeassistant")
    ) {
        self.server = server
        self.token = token
        self.clock = clock
        self.caFile = caFile
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.reconnect = reconnect
        self.maxFrameSize = maxFrameSize
        self.logger = logger
    }
}
