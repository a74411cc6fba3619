/// The last AFC upload a device received (bytes written through FileWrite on one connection).
public struct VirtualUploadStatistics: Sendable, Codable, Equatable {
    public let bytes: Int
    /// From the first to the last FileWrite byte.
    public let seconds: Double

    public var megabytesPerSecond: Double { seconds > 0 ? Double(bytes) / 1_000_000 / seconds : 0 }
}
