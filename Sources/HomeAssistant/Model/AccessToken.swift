import Foundation

/// A Home Assistant long-lived access token. It prints, dumps and interpolates as `***`, so it
/// cannot leak into logs, errors or test output by accident; only ``reveal()`` gives the value.
public struct AccessToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    private let value: String

    public init(_ value: String) {
        self.value = value.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The secret itself, for the `auth` message and the `Authorization` header only.
    public func reveal() -> String { value }

    public var description: String { "***" }
    public var debugDescription: String { "***" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
