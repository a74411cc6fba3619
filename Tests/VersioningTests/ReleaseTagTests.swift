import Testing
import Versioning

@Suite struct ReleaseTagTests {
    @Test(arguments: [
        ("v1", "1"), ("v1.2", "1.2"), ("v1.2.3", "1.2.3"), ("v3.1.0-beta.2", "3.1.0"),
        ("v1.0.0+build.7", "1.0.0"), ("v0.0.1-rc.1+sha.abc", "0.0.1"), ("v10.20.30", "10.20.30"),
    ])
    func releaseTags(name: String, marketing: String) throws {
        let tag = try #require(ReleaseTag(name))
        #expect(tag.marketingVersion == marketing)
        #expect(tag.name == name)
    }

    @Test(arguments: [
        "vfoo", "release-1", "v1.2.x", "1.2.3", "v", "v1.2.3.4", "v01.2", "v1..2", "v1.2.", "v-1",
        "v1.2.3-", "v1.2.3-beta..1", "V1.2.3", "v１.２", "v1.2.3 ",
    ])
    func notReleaseTags(name: String) {
        #expect(ReleaseTag(name) == nil)
    }

    @Test func semanticVersionOrder() throws {
        // The order semver.org §11 gives, written out by hand.
        let ordered = [
            "v1.0.0-alpha", "v1.0.0-alpha.1", "v1.0.0-alpha.beta", "v1.0.0-beta", "v1.0.0-beta.2",
            "v1.0.0-beta.11", "v1.0.0-rc.1", "v1.0.0", "v1.2.0", "v1.9.0", "v1.10.0", "v2", "v2.0.1",
        ].map { ReleaseTag($0)! }
        for (lower, higher) in zip(ordered, ordered.dropFirst()) {
            #expect(lower < higher, "\(lower) < \(higher)")
            #expect(!(higher < lower), "\(higher) !< \(lower)")
        }
        #expect(ordered.shuffled().max() == ReleaseTag("v2.0.1"))
    }
}
