/// Build variants and deadlines of the virtual app.
public struct VirtualHADashboardOptions: Sendable, Codable, Equatable {
    /// An app build that fires `ha_dashboard_loaded` after loading (the released app does not; a
    /// device opts into waiting for it with `loaded_event: true`).
    public var sendsLoadedEvent: Bool
    /// Deadline for connecting and authenticating, and for each request.
    public var requestSeconds: Double
    /// First reconnect delay; doubles per attempt up to `maximumReconnectSeconds` (the app's backoff).
    public var reconnectSeconds: Double
    public var maximumReconnectSeconds: Double

    public init(
        sendsLoadedEvent: Bool = false, requestSeconds: Double = 15, reconnectSeconds: Double = 1,
        maximumReconnectSeconds: Double = 60
    ) {
        self.sendsLoadedEvent = sendsLoadedEvent
        self.requestSeconds = requestSeconds
        self.reconnectSeconds = reconnectSeconds
        self.maximumReconnectSeconds = maximumReconnectSeconds
    }
}
