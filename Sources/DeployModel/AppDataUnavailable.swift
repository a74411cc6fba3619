/// This backend cannot read an app's data container (the SSH driver until it reads
/// /var/mobile/Documents; an app build that is not development-signed), so the app's log is no
/// evidence there.
public struct AppDataUnavailable: Error, Sendable, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}
