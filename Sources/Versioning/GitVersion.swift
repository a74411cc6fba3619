/// The app's version as derived from git: nothing is read from or written to a file.
public struct GitVersion: Sendable, Hashable, Codable, CustomStringConvertible {
    /// CFBundleShortVersionString: from the nearest `v*` tag, pre-release dropped; `0.0.0` without a tag.
    public var marketingVersion: String
    /// CFBundleVersion: the number of commits reachable from HEAD.
    public var buildNumber: Int
    /// The tag the marketing version came from, if any.
    public var tag: String?
    /// Commits between that tag and HEAD (all of them when there is no tag).
    public var commitsSinceTag: Int
    /// Whether tracked files have uncommitted changes.
    public var dirty: Bool
    /// Whether the clone is shallow (then the build number is not trustworthy).
    public var shallow: Bool

    /// `1.10.0 (57)`.
    public var description: String { "\(marketingVersion) (\(buildNumber))" }

    enum CodingKeys: String, CodingKey {
        case marketingVersion, buildNumber, tag, commitsSinceTag, dirty, shallow
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(marketingVersion, forKey: .marketingVersion)
        try container.encode(buildNumber, forKey: .buildNumber)
        try container.encode(tag, forKey: .tag)  // explicit null when there is no tag
        try container.encode(commitsSinceTag, forKey: .commitsSinceTag)
        try container.encode(dirty, forKey: .dirty)
        try container.encode(shallow, forKey: .shallow)
    }
}

extension GitVersion {
    /// 0.0.0 (0): for plans whose commands do not depend on the version (trusting a host key, asking a
    /// build host for its Xcode), so they need no git repository.
    public static let unversioned = GitVersion(
        marketingVersion: "0.0.0", buildNumber: 0, tag: nil, commitsSinceTag: 0, dirty: false, shallow: false)
}
