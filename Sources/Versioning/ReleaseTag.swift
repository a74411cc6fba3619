/// A release tag of the form `v` + one to three dot-separated integers, with an optional
/// pre-release (`-beta.2`) and build metadata (`+sha`) that are parsed for ordering and then dropped.
public struct ReleaseTag: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let name: String
    public let numbers: [Int]
    public let preRelease: [String]

    /// Parses `name`, or returns nil when it is not `v` + digits (such tags are ignored).
    public init?(_ name: String) {
        guard name.hasPrefix("v") else { return nil }
        var rest = Substring(name.dropFirst())
        if let plus = rest.firstIndex(of: "+") { rest = rest[..<plus] }
        var pre: [String] = []
        if let dash = rest.firstIndex(of: "-") {
            let preText = rest[rest.index(after: dash)...]
            pre = preText.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !preText.isEmpty, pre.allSatisfy({ !$0.isEmpty }) else { return nil }
            rest = rest[..<dash]
        }
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var numbers: [Int] = []
        for part in parts {
            // Leading zeros are not semantic-version numbers; "v01.2" is not a release tag.
            guard !part.isEmpty, part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber),
                part == "0" || !part.hasPrefix("0"), let value = Int(part)
            else { return nil }
            numbers.append(value)
        }
        self.name = name
        self.numbers = numbers
        self.preRelease = pre
    }

    /// What CFBundleShortVersionString takes: the integers only, as written (1 to 3 of them).
    public var marketingVersion: String {
        numbers.map(String.init).joined(separator: ".")
    }

    public var description: String { name }

    public static func < (lhs: ReleaseTag, rhs: ReleaseTag) -> Bool {
        let width = 3
        let l = lhs.numbers + Array(repeating: 0, count: width - lhs.numbers.count)
        let r = rhs.numbers + Array(repeating: 0, count: width - rhs.numbers.count)
        if l != r { return l.lexicographicallyPrecedes(r) }
        // Semantic versioning: a pre-release sorts before its release.
        switch (lhs.preRelease.isEmpty, rhs.preRelease.isEmpty) {
        case (true, true): return lhs.name < rhs.name
        case (false, true): return true
        case (true, false): return false
        case (false, false): break
        }
        for (a, b) in zip(lhs.preRelease, rhs.preRelease) where a != b {
            switch (Int(a), Int(b)) {
            case let (x?, y?): return x < y
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a < b
            }
        }
        if lhs.preRelease.count != rhs.preRelease.count {
            return lhs.preRelease.count < rhs.preRelease.count
        }
        return lhs.name < rhs.name
    }
}
