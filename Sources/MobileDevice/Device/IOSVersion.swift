/// An iOS version as lockdown reports it ("15.8", "9.3.5"), comparable.
public struct IOSVersion: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    public let components: [Int]

    public init(_ text: String) {
        components = text.split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
    }

    /// Encoded as its text ("15.8"), as lockdown reports it.
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public var major: Int { components.first ?? 0 }
    public var minor: Int { components.count > 1 ? components[1] : 0 }
    /// "15.8" for 15.8.3: the key of Xcode's DeviceSupport folders.
    public var majorMinor: String { "\(major).\(minor)" }
    public var description: String { components.map(String.init).joined(separator: ".") }

    /// "17.0" equals "17.0.0": trailing zero components do not count.
    public static func == (lhs: IOSVersion, rhs: IOSVersion) -> Bool {
        !(lhs < rhs) && !(rhs < lhs)
    }

    public func hash(into hasher: inout Hasher) {
        var trimmed = components
        while trimmed.last == 0 { trimmed.removeLast() }
        hasher.combine(trimmed)
    }

    public static func < (lhs: IOSVersion, rhs: IOSVersion) -> Bool {
        let count = max(lhs.components.count, rhs.components.count)
        for index in 0..<count {
            let left = index < lhs.components.count ? lhs.components[index] : 0
            let right = index < rhs.components.count ? rhs.components[index] : 0
            if left != right { return left < right }
        }
        return false
    }
}
